#!/usr/bin/env python3
"""Distributed word count with medium messages.

    ramp-run -n 4 python3 python/examples/wordcount.py [FILE...] [--words N] [--top K]

Every rank counts the words of its share of the input (files FILE... dealt out
round-robin by rank, or, without files, N words of generated text per rank), then
sends each (word, count) pair to the rank that owns the word (crc32(word) mod size)
in medium messages of at most MAX_MEDIUM bytes.  Owners add up what they receive;
an all-gather of the per-owner message counts tells every owner how many messages
to wait for.  Finally every owner sends its K most frequent words to rank 0, which
prints the global top K and checks that no word was lost.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import re
import struct
import sys
import zlib
from typing import Counter, Dict, List

try:
    import ramp
except ImportError:  # running from the source tree without `pip install ./python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ramp

H_COUNTS = 10  # medium request: "word count\n" lines            (arg: sender rank)
H_TOP = 11  # medium request to rank 0: an owner's top words     (args: owner, its total)

VOCABULARY = (
    "active message handler request reply token endpoint bundle segment tag "
    "network packet datagram sequence acknowledgement window credit poll wait "
    "barrier gather rank process job launcher python ctypes buffer numpy latency "
    "bandwidth round trip reliable protocol retransmission checksum medium long short"
).split()


def generated_words(rank: int, n: int) -> List[str]:
    """n words with a Zipf-like distribution, the same for a given rank on every run."""
    rng = random.Random(1000 + rank)
    weights = [1.0 / (i + 1) for i in range(len(VOCABULARY))]
    return rng.choices(VOCABULARY, weights=weights, k=n)


def owner_of(word: str, size: int) -> int:
    """The rank that adds up `word` (crc32: the same in every process, unlike hash())."""
    return zlib.crc32(word.encode()) % size


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", help="text files (default: generated text)")
    p.add_argument("--words", type=int, default=50000, help="generated words per rank")
    p.add_argument("--top", type=int, default=10, help="how many words to print")
    args = p.parse_args()

    job = ramp.spmd.startup()
    ep, rank, size = job.endpoint, job.rank, job.size

    # ---- map: count my share ------------------------------------------------------
    if args.files:
        words: List[str] = []
        for i, path in enumerate(args.files):
            if i % size == rank:
                with open(path, encoding="utf-8", errors="replace") as f:
                    words += re.findall(r"[a-z0-9']+", f.read().lower())
    else:
        words = generated_words(rank, args.words)
    local: Counter[str] = collections.Counter(words)

    # ---- shuffle: (word, count) pairs to their owners, in medium messages ------------
    partial: Counter[str] = collections.Counter()
    received = [0]
    tops: Dict[int, List[tuple]] = {}
    totals: Dict[int, int] = {}

    def on_counts(token: ramp.Token, buf: memoryview, sender: int) -> None:
        # buf is the library's buffer, valid only during this call: parse it now
        for line in bytes(buf).decode().splitlines():
            w, c = line.rsplit(" ", 1)
            partial[w] += int(c)
        received[0] += 1

    def on_top(token: ramp.Token, buf: memoryview, owner: int, total: int) -> None:
        tops[owner] = [
            (w, int(c))
            for w, c in (line.rsplit(" ", 1) for line in bytes(buf).decode().splitlines())
        ]
        totals[owner] = total

    ep.set_handler(H_COUNTS, on_counts)
    ep.set_handler(H_TOP, on_top)
    job.barrier()

    chunks: Dict[int, List[bytes]] = {r: [] for r in range(size)}
    current: Dict[int, bytearray] = {r: bytearray() for r in range(size)}
    for w, c in local.items():
        line = ("%s %d\n" % (w, c)).encode()
        r = owner_of(w, size)
        if len(current[r]) + len(line) > ramp.MAX_MEDIUM:
            chunks[r].append(bytes(current[r]))
            current[r] = bytearray()
        current[r] += line
    for r in range(size):
        if current[r]:
            chunks[r].append(bytes(current[r]))
    sent = [len(chunks[r]) for r in range(size)]
    for r in range(size):
        for chunk in chunks[r]:
            ep.request_medium(r, H_COUNTS, chunk, rank)

    # how many messages each owner must wait for: an all-gather of the counts sent
    matrix = [
        struct.unpack("<%di" % size, b) for b in job.allgather(struct.pack("<%di" % size, *sent))
    ]
    expected = sum(row[rank] for row in matrix)
    ep.wait(lambda: received[0] >= expected)

    # ---- reduce: every owner's top words to rank 0 ------------------------------------
    my_total = sum(partial.values())
    top = partial.most_common(args.top)
    ep.request_medium(0, H_TOP, "".join("%s %d\n" % wc for wc in top).encode(), rank, my_total)
    all_totals = [struct.unpack("<q", b)[0] for b in job.allgather(struct.pack("<q", len(words)))]
    if rank == 0:
        ep.wait(lambda: len(tops) == size)
        merged = sorted((wc for t in tops.values() for wc in t), key=lambda wc: (-wc[1], wc[0]))
        counted = sum(totals.values())
        print(
            "wordcount: %d ranks, %d words in, %d words counted by the owners"
            % (size, sum(all_totals), counted)
        )
        for w, c in merged[: args.top]:
            print("wordcount: %8d  %s" % (c, w))
        if counted != sum(all_totals):
            print("wordcount: MISMATCH: %d words read but %d counted" % (sum(all_totals), counted))
            job.barrier()
            return 1
        print("wordcount: OK")
    job.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
