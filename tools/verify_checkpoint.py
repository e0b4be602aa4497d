#!/usr/bin/env python3
"""Checks a replay checkpoint with nothing of replay's own code.

    tools/verify_checkpoint.py CHECKPOINT.json JWKS.json [--db replay.sqlite]

CHECKPOINT.json is one event of the stream replay/checkpoints; JWKS.json is the daemon's
key set, saved from its HTTP door (/v1/stream/__ds/jwks.json) and kept apart from it.
Checks the Ed25519 signature over the checkpoint's five lines; with --db (a copy of a
SQLite store, or the live file: it is only read), also recomputes the stream's hash chain
from its `events` view up to the checkpoint's event and compares. Exit status 0: it holds.
Needs Python's `cryptography` (Debian: python3-cryptography).
"""
import argparse
import base64
import datetime
import hashlib
import json
import sqlite3
import struct
import sys


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_signature(checkpoint, jwks):
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = next((k for k in jwks["keys"] if k.get("kid") == checkpoint["kid"] and k.get("crv") == "Ed25519"), None)
    if key is None:
        sys.exit(f"no Ed25519 key {checkpoint['kid']} in the key set")
    message = "replay-checkpoint-v1\n{stream}\n{seq}\n{hash}\n{time}".format(**checkpoint).encode()
    try:
        Ed25519PublicKey.from_public_bytes(b64url(key["x"])).verify(b64url(checkpoint["signature"]), message)
    except InvalidSignature:
        sys.exit("the signature is not valid: the checkpoint was not signed as it reads")


def link(previous, stream, seq, millis, payload, key=None):
    """One link of the chain: SHA-256 over the previous hash and the event (its key, if it
    has one, after a marker byte 1 and its length; a marker byte 0 without)."""
    name = stream.encode()
    data = previous + struct.pack(">H", len(name)) + name + struct.pack(">Qq", seq, millis)
    if key is None:
        data += b"\x00"
    else:
        data += b"\x01" + struct.pack(">H", len(key.encode())) + key.encode()
    return hashlib.sha256(data + struct.pack(">Q", len(payload)) + payload).digest()


def millis(text):
    moment = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(round(moment.timestamp() * 1000))


def recompute(db, stream, through=None):
    """Walks `stream`'s chain in a SQLite store from its base: (last seq, its hash), or
    raises ValueError naming the first event that does not match. (A fork's inherited
    events are its source's rows: check the source.)"""
    row = db.execute("SELECT chain_base FROM streams WHERE name = ?", (stream,)).fetchone()
    if row is None:
        raise ValueError(f"no stream {stream}")
    previous, last = row[0] or bytes(32), None
    query = "SELECT seq, time, payload, hash, key FROM events WHERE stream = ? AND seq <= ? ORDER BY seq"
    for seq, time, payload, stored, key in db.execute(query, (stream, through if through is not None else 2**62)):
        if stored is None and previous == bytes(32):
            continue  # stored before chaining began
        previous = link(previous, stream, seq, millis(time), bytes(payload), key)
        if previous.hex() != stored:
            raise ValueError(f"{stream}: event {seq} does not match its chain: expected {previous.hex()}, stored {stored}")
        last = seq
    return last, previous


def check_chain(checkpoint, path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        last, head = recompute(db, checkpoint["stream"], checkpoint["seq"])
    except ValueError as error:
        sys.exit(str(error))
    if last != checkpoint["seq"]:
        sys.exit(f"event {checkpoint['seq']} is not in {path}")
    if head.hex() != checkpoint["hash"]:
        sys.exit(f"the chain arrives at {head.hex()}, not the checkpoint's {checkpoint['hash']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("jwks")
    parser.add_argument("--db")
    args = parser.parse_args()
    with open(args.checkpoint) as f:
        checkpoint = json.loads(f.readline())
    with open(args.jwks) as f:
        jwks = json.load(f)
    check_signature(checkpoint, jwks)
    if args.db:
        check_chain(checkpoint, args.db)
    print(f"checkpoint {checkpoint['stream']}@{checkpoint['seq']} holds")


if __name__ == "__main__":
    main()
