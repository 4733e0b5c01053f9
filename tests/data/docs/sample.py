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
