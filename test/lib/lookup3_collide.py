# Copyright (c) 2026, the dlock developers
"""test/lib/lookup3_collide.py: a name whose 1.1 lock key is a given name's.

dlock 1.1 keyed a lock name with PostgreSQL's hash_any_extended(name, len,
0) (SQL: hashtextextended(name, 0)), lookup3, which is unkeyed and
invertible.  This solves, for a target name, a printable 24-byte name with
the same 64-bit hash: choose the first 12 bytes and the final state's
unreported word a, run lookup3's final() and the last mix() backwards from
the target's (b, c), and keep the last 12 bytes when they come out
printable (about one try in 150,000; well under a minute in Python, and
what an attacker would do in C in milliseconds).  Used by lock_keys.py;
run alone it prints a name colliding with each argument:

    python3 test/lib/lookup3_collide.py payouts
"""

import random
import struct
import sys

M = 0xFFFFFFFF


def rot(x, k):
    return ((x << k) | (x >> (32 - k))) & M


def mix(a, b, c):
    a = (a - c) & M; a ^= rot(c, 4); c = (c + b) & M
    b = (b - a) & M; b ^= rot(a, 6); a = (a + c) & M
    c = (c - b) & M; c ^= rot(b, 8); b = (b + a) & M
    a = (a - c) & M; a ^= rot(c, 16); c = (c + b) & M
    b = (b - a) & M; b ^= rot(a, 19); a = (a + c) & M
    c = (c - b) & M; c ^= rot(b, 4); b = (b + a) & M
    return a, b, c


def unmix(a, b, c):
    b = (b - a) & M; c ^= rot(b, 4); c = (c + b) & M
    a = (a - c) & M; b ^= rot(a, 19); b = (b + a) & M
    c = (c - b) & M; a ^= rot(c, 16); a = (a + c) & M
    b = (b - a) & M; c ^= rot(b, 8); c = (c + b) & M
    a = (a - c) & M; b ^= rot(a, 6); b = (b + a) & M
    c = (c - b) & M; a ^= rot(c, 4); a = (a + c) & M
    return a, b, c


def final(a, b, c):
    c ^= b; c = (c - rot(b, 14)) & M
    a ^= c; a = (a - rot(c, 11)) & M
    b ^= a; b = (b - rot(a, 25)) & M
    c ^= b; c = (c - rot(b, 16)) & M
    a ^= c; a = (a - rot(c, 4)) & M
    b ^= a; b = (b - rot(a, 14)) & M
    c ^= b; c = (c - rot(b, 24)) & M
    return a, b, c


def unfinal(a, b, c):
    c = (c + rot(b, 24)) & M; c ^= b
    b = (b + rot(a, 14)) & M; b ^= a
    a = (a + rot(c, 4)) & M; a ^= c
    c = (c + rot(b, 16)) & M; c ^= b
    b = (b + rot(a, 25)) & M; b ^= a
    a = (a + rot(c, 11)) & M; a ^= c
    c = (c + rot(b, 14)) & M; c ^= b
    return a, b, c


def hash_extended(data):
    """hash_bytes_extended(data, len, 0) as an unsigned 64-bit integer."""
    n = len(data)
    a = b = c = (0x9e3779b9 + n + 3923095) & M
    k = bytes(data)
    while len(k) >= 12:
        x, y, z = struct.unpack("<III", k[:12])
        a, b, c = mix((a + x) & M, (b + y) & M, (c + z) & M)
        k = k[12:]
    rest = len(k)
    pad = k + bytes(12 - rest)
    x, y, z = struct.unpack("<III", pad)
    # The last block: bytes 9 to 11 go into c shifted by one byte (its
    # lowest byte is lookup3's length slot, unused here).
    z = (z << 8) & M
    a, b, c = (a + x) & M, (b + y) & M, (c + z) & M
    a, b, c = final(a, b, c)
    return (b << 32) | c


PRINTABLE = bytes(range(0x21, 0x7F))


def collide(target, seed=0):
    """A printable 24-byte name with the 64-bit 1.1 key of target (str)."""
    want = hash_extended(target.encode())
    tb, tc = want >> 32, want & M
    rng = random.Random(seed)
    init = (0x9e3779b9 + 24 + 3923095) & M
    while True:
        head = bytes(rng.choice(PRINTABLE) for _ in range(12))
        x, y, z = struct.unpack("<III", head)
        s = mix((init + x) & M, (init + y) & M, (init + z) & M)
        for _ in range(4096):
            # 24 bytes: two full blocks are mixed, and final() runs on
            # the state as the second mix left it.
            t = unmix(*unfinal(rng.getrandbits(32), tb, tc))
            tail = struct.pack("<III", *((t[i] - s[i]) & M for i in range(3)))
            if all(0x21 <= ch < 0x7F for ch in tail):
                name = (head + tail).decode()
                assert hash_extended(name.encode()) == want
                return name


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(collide(arg))
