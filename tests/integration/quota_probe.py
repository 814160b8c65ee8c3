"""Driver calls through ctypes whose answers the quota tests compare inside and outside a
tenant: the interposer must hand back the driver's own result where it has nothing to add.

Usage: python3 quota_probe.py COMMAND; prints one JSON object.
  meminfo-null   cuMemGetInfo_v2 with NULL arguments (and once with none, for the values)
  free-unknown   cuMemFree_v2 of pointers the interposer never saw: one never allocated,
                 one freed twice; and cuMemGetInfo_v2 before and after
  alloc-and-exit allocates 800 MiB and exits normally without freeing it"""
import ctypes as C
import json
import sys

from nvml_probe import Cuda


def cmd_meminfo_null(cu):
    f, t = C.c_size_t(7), C.c_size_t(7)
    fn = cu.lib.cuMemGetInfo_v2
    res = {"both_null": fn(None, None), "total_null": fn(C.byref(f), None), "free_null": fn(None, C.byref(t)),
           "untouched": [f.value, t.value]}
    res["plain"] = fn(C.byref(f), C.byref(t))
    res["values"] = [f.value, t.value]
    return res


def cmd_free_unknown(cu):
    before = cu.mem_info()
    never = cu.lib.cuMemFree_v2(C.c_uint64(0x7f0000001000))
    p = cu.alloc(64 << 20)
    first = cu.lib.cuMemFree_v2(C.c_uint64(p))
    second = cu.lib.cuMemFree_v2(C.c_uint64(p))
    return {"never_allocated": never, "first_free": first, "second_free": second,
            "before": list(before), "after": list(cu.mem_info())}


def cmd_alloc_and_exit(cu):
    cu.alloc(800 << 20)
    return {"allocated": 800 << 20}


COMMANDS = {"meminfo-null": cmd_meminfo_null, "free-unknown": cmd_free_unknown, "alloc-and-exit": cmd_alloc_and_exit}

if __name__ == "__main__":
    print(json.dumps(COMMANDS[sys.argv[1]](Cuda(0))), flush=True)
