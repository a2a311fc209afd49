"""Python multiprocessing as data tools use it.

A: a Pool mapping a function over numbers. B: a bigger Pool with imap_unordered and
chunks, a Process and a Queue, a shared Value under a Lock, and a spawn-context pool.
"""

import multiprocessing as mp
import sys


def square(x):
    return x * x


def producer(q, n):
    for i in range(n):
        q.put(i)
    q.put(None)


def bump(counter, lock, n):
    for _ in range(n):
        with lock:
            counter.value += 1


if __name__ == "__main__":
    if sys.argv[1] == "A":
        with mp.Pool(2) as pool:
            print(sum(pool.map(square, range(1000))))
    else:
        with mp.Pool(4) as pool:
            print(sum(pool.imap_unordered(square, range(5000), chunksize=100)))
        q = mp.Queue()
        p = mp.Process(target=producer, args=(q, 100))
        p.start()
        total = 0
        while (item := q.get()) is not None:
            total += item
        p.join()
        print("queue", total, p.exitcode)
        counter, lock = mp.Value("i", 0), mp.Lock()
        workers = [mp.Process(target=bump, args=(counter, lock, 200)) for _ in range(3)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        print("counter", counter.value)
        with mp.get_context("spawn").Pool(2) as pool:
            print("spawn", pool.map(square, [3, 4]))
