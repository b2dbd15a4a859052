"""The byte mutations the fuzzers share: bytes flipped, `inserts` written over, spans cut or inserted."""


def mutate(rng, data, inserts):
    data = bytearray(data)
    for _ in range(rng.choice([1, 2, 4, 8, 32])):
        if not data:
            break
        i, r = rng.randrange(len(data)), rng.random()
        if r < 0.5:
            data[i] = rng.randrange(256)
        elif r < 0.7:
            data[i:i + 4] = rng.choice(inserts)
        elif r < 0.85:
            del data[i:i + rng.randrange(1, 64)]
        else:
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
    return bytes(data)


# What payload cases write over their bytes: deep nesting, a lone surrogate, invalid UTF-8, a number
# out of range, an object cut short, a NUL.
PAYLOAD_INSERTS = [b"[" * 70, b'"\\ud800"', b"\xff\xfe", b"1e99999", b'{"a":', b"\x00"]
