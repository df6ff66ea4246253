#!/usr/bin/env python3
"""A second perf.data reader, independent of pdfix's code, that takes each event's attr from the
EVENT_DESC feature (as several readers do: it is the newer, named copy) instead of the attrs
section or a stream's ATTR records, and parses every sample with it.

  python3 event_desc_reader.py FILE

Prints JSON: the events EVENT_DESC describes, how many samples there were and how many parsed to
exactly their record's end, the user frames their callchains hold, and the first errors. Exits 1
when a sample does not parse (its layout is not the one EVENT_DESC says), 2 when the file has no
EVENT_DESC or is no perf.data this reader takes (little-endian, uncompressed).

Field order and sizes: the kernel's include/uapi/linux/perf_event.h, PERF_RECORD_SAMPLE.
"""
import json
import struct
import sys

SAMPLE, HEADER_ATTR, HEADER_FEATURE, FINISHED_INIT = 9, 64, 80, 82
EVENT_DESC = 12
CONTEXT_USER = 0xFFFFFFFFFFFFFE00  # PERF_CONTEXT_USER, as u64
CONTEXT_MAX = 0xFFFFFFFFFFFFF001  # PERF_CONTEXT_MAX = -4095: entries above it are markers


def u32(b, at):
    return struct.unpack_from("<I", b, at)[0]


def u64(b, at):
    return struct.unpack_from("<Q", b, at)[0]


def parse_event_desc(b):
    nr, attr_size = u32(b, 0), u32(b, 4)
    at, events = 8, []
    for _ in range(nr):
        attr = b[at:at + attr_size]
        at += attr_size
        nr_ids = u32(b, at)
        name_len = u32(b, at + 4)
        name = b[at + 8:at + 8 + name_len].split(b"\0")[0].decode(errors="replace")
        at += 8 + name_len
        ids = [u64(b, at + 8 * i) for i in range(nr_ids)]
        at += 8 * nr_ids
        field = lambda off, size=8: (int.from_bytes(attr[off:off + size], "little")
                                     if len(attr) >= off + size else 0)
        events.append({
            "name": name, "ids": ids, "attr_size": attr_size,
            "sample_type": field(24), "read_format": field(32),
            "branch_sample_type": field(72), "sample_regs_user": field(80),
            "sample_regs_intr": field(96),
        })
    return events


def parse_sample(b, at, end, ev):
    """The sample's user frames; raises ValueError where the record does not hold what `ev` says."""
    t, pos, user_frames = ev["sample_type"], at, 0

    def take(n):
        nonlocal pos
        if pos + n > end:
            raise ValueError(f"sample at {at - 8:#x} ends {pos + n - end} bytes early "
                             f"for sample_type {t:#x}")
        pos += n
        return pos - n

    for bit in (16, 0, 1, 2, 3, 6, 9, 7, 8):  # IDENTIFIER IP TID TIME ADDR ID STREAM_ID CPU PERIOD
        if t & (1 << bit):
            take(8)
    if t & (1 << 4):  # READ
        rf = ev["read_format"]
        per_value = 8 * (1 + bool(rf & 4) + bool(rf & 16))  # value, ID, LOST
        if rf & 8:  # GROUP
            nr = u64(b, take(8))
            take(8 * (bool(rf & 1) + bool(rf & 2)) + nr * per_value)
        else:
            take(per_value + 8 * (bool(rf & 1) + bool(rf & 2)))
    if t & (1 << 5):  # CALLCHAIN
        nr = u64(b, take(8))
        chain = [u64(b, take(8)) for _ in range(nr)]
        in_user = False
        for ip in chain:
            if ip >= CONTEXT_MAX:
                in_user = ip == CONTEXT_USER
            elif in_user:
                user_frames += 1
    if t & (1 << 10):  # RAW
        take(u32(b, take(4)))
    if t & (1 << 11):  # BRANCH_STACK
        nr = u64(b, take(8))
        bst = ev["branch_sample_type"]
        take(8 * bool(bst & (1 << 17)) + 24 * nr + 8 * nr * bool(bst & (1 << 19)))
    if t & (1 << 12):  # REGS_USER
        if u64(b, take(8)):
            take(8 * bin(ev["sample_regs_user"]).count("1"))
    if t & (1 << 13):  # STACK_USER
        size = u64(b, take(8))
        if size:
            take(size + 8)
    for bit in (14, 24, 15, 17):  # WEIGHT, WEIGHT_STRUCT, DATA_SRC, TRANSACTION
        if t & (1 << bit):
            take(8)
    if t & (1 << 18):  # REGS_INTR
        if u64(b, take(8)):
            take(8 * bin(ev["sample_regs_intr"]).count("1"))
    if t & (1 << 19):  # PHYS_ADDR
        take(8)
    if t & (1 << 20):  # AUX
        take(u64(b, take(8)))
    for bit in (21, 22, 23):  # CGROUP, DATA_PAGE_SIZE, CODE_PAGE_SIZE
        if t & (1 << bit):
            take(8)
    if pos != end:
        raise ValueError(f"sample at {at - 8:#x} has {end - pos} bytes past what sample_type "
                         f"{t:#x} lays out")
    return user_frames


def event_of(b, at, events, by_id):
    if len(events) == 1:
        return events[0]
    t = events[0]["sample_type"]
    if t & (1 << 16):
        return by_id.get(u64(b, at))
    if not t & (1 << 6):
        return None
    pos = at + 8 * sum(bool(t & (1 << bit)) for bit in (0, 1, 2, 3))
    return by_id.get(u64(b, pos))


def main():
    b = open(sys.argv[1], "rb").read()
    if b[:8] != b"PERFILE2":
        print(json.dumps({"error": "not a little-endian perf.data"}))
        return 2
    records = []  # (start, end) of each record in the data
    desc = None
    if u64(b, 8) == 16:  # a stream: features come as HEADER_FEATURE records
        at = 16
        while at + 8 <= len(b):
            size = struct.unpack_from("<H", b, at + 6)[0]
            if size < 8:
                break
            rtype = u32(b, at)
            if rtype == HEADER_FEATURE and size > 16 and u64(b, at + 8) == EVENT_DESC:
                desc = b[at + 16:at + size]
            records.append((at, at + size))
            at += size
    else:
        data_off, data_size = u64(b, 40), u64(b, 48)
        bits = int.from_bytes(b[72:104], "little")
        table = data_off + data_size
        for n, feat in enumerate(f for f in range(256) if bits & (1 << f)):
            if feat == EVENT_DESC:
                off, size = u64(b, table + 16 * n), u64(b, table + 16 * n + 8)
                desc = b[off:off + size]
        at = data_off
        while at + 8 <= data_off + data_size:
            size = struct.unpack_from("<H", b, at + 6)[0]
            if size < 8:
                break
            records.append((at, at + size))
            at += size
    if desc is None:
        print(json.dumps({"error": "no EVENT_DESC"}))
        return 2
    events = parse_event_desc(desc)
    by_id = {i: ev for ev in events for i in ev["ids"]}
    samples = parsed = user_frames = 0
    errors = []
    for start, end in records:
        if u32(b, start) != SAMPLE:
            continue
        samples += 1
        ev = event_of(b, start + 8, events, by_id)
        try:
            if ev is None:
                raise ValueError(f"sample at {start:#x}: no event of EVENT_DESC has its id")
            user_frames += parse_sample(b, start + 8, end, ev)
            parsed += 1
        except ValueError as e:
            if len(errors) < 5:
                errors.append(str(e))
    print(json.dumps({"events": [{k: (hex(v) if isinstance(v, int) else v)
                                  for k, v in ev.items() if k != "ids"} for ev in events],
                      "samples": samples, "parsed": parsed, "user_frames": user_frames,
                      "errors": errors}))
    return 0 if parsed == samples else 1


if __name__ == "__main__":
    sys.exit(main())
