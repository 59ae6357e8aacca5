"""Seeds derived from the run's secret seed: per config, distribution and trial."""

from __future__ import annotations

import hashlib


def derive_seed(secret: int, *parts: object) -> int:
    """A 63-bit seed determined by the secret and the parts, unguessable without the secret."""
    key = secret.to_bytes(16, "little", signed=True)
    message = "\x1f".join(str(p) for p in parts).encode()
    digest = hashlib.blake2b(message, key=key, digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def seed_hash(secret: int) -> str:
    """The public fingerprint of a secret seed, recorded in run.json."""
    return hashlib.sha256(f"kernel-gauntlet-seed:{secret}".encode()).hexdigest()
