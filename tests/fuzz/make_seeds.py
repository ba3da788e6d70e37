#!/usr/bin/env python3
"""Writes the hand-made seed inputs of corpus/<target>/ (valid and near-valid inputs of each
parser). Regression inputs from findings are added by hand next to them and never rewritten
here. Run from anywhere: python3 tests/fuzz/make_seeds.py"""
import gzip
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def pack(v):
    """Minimal msgpack encoder: what the formats use (map, array, str, bin, non-negative and
    negative ints)."""
    if isinstance(v, bool):
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, str):
        b = v.encode()
        return (bytes([0xA0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(v, bytes):
        return b"\xc4" + bytes([len(v)]) + v
    if isinstance(v, list):
        return bytes([0x90 | len(v)]) + b"".join(pack(x) for x in v)
    if isinstance(v, dict):
        return bytes([0x80 | len(v)]) + b"".join(pack(k) + pack(x) for k, x in v.items())
    raise TypeError(v)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def tensor(dtype, shape, payload=None):
    n = 1
    for s in shape:
        n *= s
    if payload is None:
        payload = bytes(range(4 * n)) if 4 * n < 256 else bytes(4 * n)
    return pack({"v": 1, "dtype": dtype, "shape": shape, "nbytes": 4 * n}) + payload


# ---- strategy files (parallel/strategy_file.h)
LAYOUT = ('{"device_matrix": [2, 2, 2], "alias_name": ["dp", "sp", "mp"], "tensor_map": ["mp", ["sp", "dp"]]}, '
          '{"device_matrix": [2, 2, 2], "alias_name": ["dp", "sp", "mp"], "tensor_map": [["sp", "dp"], "None"]}')
write("strategy_file", "layouts.json",
      '{"version": 1, "strategies": {"matmul1/MatMul": {"in_strategy": [%s]}}}' % LAYOUT)
write("strategy_file", "tuples.json",
      '{"version": 1, "strategies": {"relu1/ReLU": {"in_strategy": [[4, 1]]},\n'
      ' "matmul2/MatMul": {"in_strategy": [[2, 4], [4, 1]], "out_strategy": [[8, 1]]}}}')
write("strategy_file", "no_version.json", '{"strategies": {}}')
write("strategy_file", "bad_version.json", '{"version": 2, "strategies": {"a": {"in_strategy": [[1]]}}}')
write("strategy_file", "mixed.json", '{"strategies": {"a": {"in_strategy": [[2, 1], %s]}}}' % LAYOUT.split("}, ")[0] + "}")
write("strategy_file", "unknown_key.json", '{"strategies": {"a": {"in_strategy": [[1]], "out": 1}}}')
write("strategy_file", "bad_axis.json",
      '{"strategies": {"a": {"in_strategy": [{"device_matrix": [2], "alias_name": ["x"], "tensor_map": ["y"]}]}}}')
write("strategy_file", "deep.json", '{"strategies": ' + "[" * 20 + "]" * 20 + "}")
write("strategy_file", "not_json.json", '{"strategies": {"a": {"in_strategy": [[1, 2]')

# ---- hostfiles (tools/sfrun/hostfile.h)
write("hostfile", "hosts", "# two nodes\nnode1 slots=4\nnode2 slots=4 addr=10.0.0.2\n\n  node3   # default slot\n")
write("hostfile", "twice", "a slots=1\na slots=2\n")
write("hostfile", "bad_slots", "a slots=0\nb slots=4097\nc slots=x\n")
write("hostfile", "bad_key", "a cpus=2\n")
write("hostfile", "empty", "# nothing\n\n")

# ---- IDX files (data/idx_file.h)
def idx(magic, dims, data):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + data

write("idx_file", "images-idx3-ubyte", idx(0x803, [2, 2, 3], bytes(range(12))))
write("idx_file", "labels-idx1-ubyte", idx(0x801, [3], b"\x01\x02\x03"))
write("idx_file", "labels-idx1-ubyte.gz", gzip.compress(idx(0x801, [4], b"\x00\x01\x02\x03"), mtime=0))
write("idx_file", "truncated", idx(0x803, [2, 2, 3], bytes(5)))
write("idx_file", "extra_bytes", idx(0x801, [1], b"\x01\x02"))
write("idx_file", "huge_dims", idx(0x803, [0xFFFFFFFF, 0xFFFFFFFF, 2], b""))
write("idx_file", "bad_magic", idx(0x802, [1, 1], b"\x00"))

# ---- tensors (core/serialize.h, docs/tensor_format.md)
write("tensor", "f32_2x3", tensor("f32", [2, 3]))
write("tensor", "i32_scalar", tensor("i32", []))
write("tensor", "empty_0x4", tensor("f32", [0, 4]))
write("tensor", "truncated", tensor("f32", [4])[:-3])
write("tensor", "bad_nbytes", pack({"v": 1, "dtype": "f32", "shape": [2], "nbytes": 4}) + bytes(4))
write("tensor", "negative_dim", pack({"v": 1, "dtype": "i32", "shape": [-1], "nbytes": 0}))

# ---- checkpoints (train/checkpoint.h, docs/checkpoint_format.md)
def ckpt(entries, count=None, fmt="shardflow-checkpoint"):
    head = pack({"format": fmt, "v": 1, "count": len(entries) if count is None else count})
    return head + b"".join(pack(n) + t for n, t in entries)

write("checkpoint", "two_entries.ckpt", ckpt([("fc1_weight", tensor("f32", [2, 2])), ("global_step", tensor("i32", []))]))
write("checkpoint", "empty.ckpt", ckpt([]))
write("checkpoint", "count_too_big.ckpt", ckpt([("w", tensor("f32", [1]))], count=1 << 40))
write("checkpoint", "not_ours.ckpt", ckpt([], fmt="other"))
write("checkpoint", "truncated.ckpt", ckpt([("w", tensor("f32", [3]))])[:-2])

# ---- zmq headers (comm/zmq/header.h); byte 0 is the world size - 1
def zh(world, **fields):
    return bytes([world - 1]) + pack(dict({"v": 2}, **fields))

write("zmq_header", "data", zh(4, kind=0, **{"from": 1}, tag=7, dtype="f32", shape=[2, 3], nbytes=24))
write("zmq_header", "close", zh(2, kind=1, **{"from": 1}))
write("zmq_header", "lane", zh(2, kind=2, **{"from": 0}, auth=bytes(32), eps=["tcp://127.0.0.1:4000"]))
write("zmq_header", "hello", zh(2, kind=3, **{"from": 1}, auth=bytes(range(32))))
write("zmq_header", "challenge", zh(2, kind=4, **{"from": 0}, auth=bytes(64)))
write("zmq_header", "proof", zh(2, kind=5, **{"from": 0}, auth=bytes(32)))
write("zmq_header", "join", zh(3, kind=6, **{"from": 2}, size=3, eps=["ipc:///tmp/r2"]))
write("zmq_header", "table", zh(2, kind=7, **{"from": 0}, eps=["ipc:///tmp/r0", "ipc:///tmp/r1"]))
write("zmq_header", "wrong_auth_length", zh(2, kind=3, **{"from": 1}, auth=bytes(31)))
write("zmq_header", "from_outside", zh(2, kind=1, **{"from": 5}))

# ---- zmq lanes (comm/zmq/lane.h): greeting, then u32 length + header (+ payload) frames
def greeting(rank, token=bytes(range(32))):
    return struct.pack("<II", 0x324C4653, rank) + token

def frame(header, payload=b""):
    h = pack(header)
    return struct.pack("<I", len(h)) + h + payload

DATA = {"v": 2, "kind": 0, "from": 1, "tag": 9, "dtype": "f32", "shape": [2], "nbytes": 8}
CLOSE = {"v": 2, "kind": 1, "from": 1}
write("zmq_lane", "data_then_close", greeting(1) + frame(DATA, bytes(8)) + frame(CLOSE))
write("zmq_lane", "two_data", greeting(1) + frame(DATA, bytes(range(8))) + frame(dict(DATA, tag=10), bytes(8)))
write("zmq_lane", "cut_payload", greeting(1) + frame(DATA, bytes(3)))
write("zmq_lane", "other_sender", greeting(2) + frame(dict(CLOSE, **{"from": 2})))
write("zmq_lane", "zero_length", greeting(1) + struct.pack("<I", 0))
write("zmq_lane", "huge_length", greeting(1) + struct.pack("<I", 1 << 31))
write("zmq_lane", "over_limit", greeting(1) + frame(dict(DATA, shape=[1 << 20], nbytes=4 << 20)))
write("zmq_lane", "bad_magic", b"XXXX" + greeting(1)[4:] + frame(CLOSE))

# ---- mpi headers (comm/mpi/header.h): host byte order (little-endian here)
def mh(kind, dtype, tag, dims, version=1, ndim=None):
    return (struct.pack("<IBBBBQ", 0x504D4653, version, kind, dtype, len(dims) if ndim is None else ndim, tag)
            + b"".join(struct.pack("<q", d) for d in dims))

write("mpi_header", "data_2x3", mh(0, 0, 42, [2, 3]))
write("mpi_header", "close", mh(1, 0, 0, []))
write("mpi_header", "i32_big_tag", mh(0, 1, (1 << 64) - 1, [5]))
write("mpi_header", "negative_dim", mh(0, 0, 1, [-4]))
write("mpi_header", "overflow", mh(0, 0, 1, [1 << 40, 1 << 40]))
write("mpi_header", "short_dims", mh(0, 0, 1, [2], ndim=2))

# ---- job spec (comm/bootstrap/job_spec.h): NAME=VALUE lines are the environment, the others argv
write("job_spec", "sfrun", "SF_RANK=1\nSF_WORLD_SIZE=4\nSF_LOCAL_RANK=1\nSF_RENDEZVOUS=tcp://10.0.0.1:29500\n"
      "SF_JOB_SECRET=abc\n--comm-timeout\n30\n")
write("job_spec", "devices", "--devices=8\n--backend\nzmq\n--comm-debug\n--epochs\n2\n")
write("job_spec", "mpirun", "OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_SIZE=2\nOMPI_COMM_WORLD_LOCAL_RANK=0\n")
write("job_spec", "slurm", "SLURM_PROCID=3\nSLURM_NTASKS=4\nSLURM_LOCALID=1\nMASTER_ADDR=node1\nMASTER_PORT=29500\n"
      "SF_JOB_SECRET=s\n")
write("job_spec", "conflict", "SF_RANK=0\nSF_WORLD_SIZE=1\n--devices\n2\n")
write("job_spec", "bad_numbers", "SF_RANK=4\nSF_WORLD_SIZE=4\n--comm-timeout=-1\nSF_BACKEND=tcp\n")

# ---- sfrun's command line (tools/sfrun/options.h): arguments separated by NUL
def argv(*a):
    return "\0".join(a)

write("sfrun_options", "simple", argv("-n", "4", "--tee", "--", "./train", "--epochs", "1"))
write("sfrun_options", "every_option", argv("-n", "8", "--nproc-per-node", "4", "--transport", "mpi", "--log-dir", "L",
      "--timeout", "2.5", "--dry-run", "--agent", "ip netns exec {host} sh -c", "--master-addr", "10.0.0.1",
      "--master-port", "29500", "--grace", "1", "--probe-timeout", "3", "--hostfile", "h", "--job-id", "j",
      "--mpirun", "mpirun", "--mpirun-args", "--bind-to none", "--mpi-rank", "p"))
write("sfrun_options", "help", argv("--help"))
write("sfrun_options", "bad_values", argv("-n", "0", "--master-port", "70000", "--job-id", "..", "p"))
write("sfrun_options", "no_program", argv("-n", "2", "--"))
