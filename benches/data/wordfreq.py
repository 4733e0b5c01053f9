import sys
from collections import Counter


def words(line, stop):
    for raw in line.split():
        w = raw.strip(".,;:!?\"'()").lower()
        if w and w not in stop:
            yield w


def main():
    stop = {"the", "a", "an", "of", "and"}
    counts = Counter()
    for line in sys.stdin:
        counts.update(words(line, stop))
    total = sum(counts.values())
    for i, (w, k) in enumerate(counts.most_common(10)):
        print(f"{i + 1:2d}. {w:<16} {k:5d} {100.0 * k / total:6.2f}%")


if __name__ == "__main__":
    main()
