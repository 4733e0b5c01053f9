"""Module docstring."""
from math import floor


def f(xs, n=4):
    """Doc.

    More.
    """
    # comment
    r = [x for x in xs
         if x > 0]
    for x in xs:
        if x:
            break
    else:
        return b'\x00'
    u = 1
    return r"\d" + u"e" + f"{n}"


class A:
    def g(self):
        return (1 +
                2)


def h():
    pass


def k(a, b):
    if a > 0:  # case 0
        b = b + 0
    if a > 1:  # case 1
        b = b + 1
    if a > 2:  # case 2
        b = b + 2
    if a > 3:  # case 3
        b = b + 3
    if a > 4:  # case 4
        b = b + 4
    if a > 5:  # case 5
        b = b + 5
    if a > 6:  # case 6
        b = b + 6
    if a > 7:  # case 7
        b = b + 7
    if a > 8:  # case 8
        b = b + 8
    if a > 9:  # case 9
        b = b + 9
    if a > 10:  # case 10
        b = b + 10
    if a > 11:  # case 11
        b = b + 11
    if a > 12:  # case 12
        b = b + 12
    if a > 13:  # case 13
        b = b + 13
    if a > 14:  # case 14
        b = b + 14
    if a > 15:  # case 15
        b = b + 15
    if a > 16:  # case 16
        b = b + 16
    if a > 17:  # case 17
        b = b + 17
    if a > 18:  # case 18
        b = b + 18
    if a > 19:  # case 19
        b = b + 19
    if a > 20:  # case 20
        b = b + 20
    if a > 21:  # case 21
        b = b + 21
    if a > 22:  # case 22
        b = b + 22
    if a > 23:  # case 23
        b = b + 23
    return b  # done
