"""Driver calls through ctypes whose answers the quota tests compare inside and outside a
tenant: the interposer must hand back the driver's own result where it has nothing to add.

Usage: python3 quota_probe.py COMMAND [ARGS...]; prints one JSON object.
  meminfo-null   cuMemGetInfo_v2 with NULL arguments (and once with none, for the values)
  free-unknown   cuMemFree_v2 of pointers the interposer never saw: one never allocated,
                 one freed twice; and cuMemGetInfo_v2 before and after
  alloc-and-exit allocates 800 MiB and exits normally without freeing it
  array-v1 HOW   1 GiB arrays through the v1 ABI (cuArrayCreate, cuArray3DCreate and the v1
                 descriptors) found HOW: dlsym, or procaddr@VERSION / legacy@VERSION
                 (cuGetProcAddress_v2 / cuGetProcAddress) at a version below 3020, where the
                 driver hands out that ABI; up to 16 of each until refused, destroyed each time,
                 and the 2D ones once more
  vmm-release-mapped
                 up to 8 times: cuMemCreate of 1 GiB, mapped at two addresses, cuMemRelease
                 while mapped; cuMemGetInfo_v2's free after that, after unmapping the first
                 mapping of each, and after the last; then how many it can hold again, and
                 the free after unmapping both mappings of each with one call
  vmm-retain     NCCL's order of freeing a mapped 1 GiB handle: retain it by address, release
                 that, unmap, release; cuMemGetInfo_v2's free after each step
  pool-reserve   1 GiB allocated, freed and synchronized: once from the default pool, then
                 from new pools whose release threshold keeps everything, up to 8 until
                 refused; then once more from the first, a trim of the first, the second
                 destroyed; cuMemGetInfo_v2's free and the pools' reserved and used after each"""
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


class ArrayDescV1(C.Structure):
    _fields_ = [("Width", C.c_uint), ("Height", C.c_uint), ("Format", C.c_int), ("NumChannels", C.c_uint)]


class Array3DDescV1(C.Structure):
    _fields_ = [("Width", C.c_uint), ("Height", C.c_uint), ("Depth", C.c_uint), ("Format", C.c_int),
                ("NumChannels", C.c_uint), ("Flags", C.c_uint)]


CU_AD_FORMAT_FLOAT = 0x20
ARRAY_FN = C.CFUNCTYPE(C.c_int, C.POINTER(C.c_void_p), C.c_void_p)


def v1_entry(cu, how, name):
    """The entry `name` found the way `how` says (see the top of the file)."""
    if how == "dlsym":
        return ARRAY_FN(C.cast(getattr(cu.lib, name), C.c_void_p).value)
    kind, version = how.split("@")
    fn, status = C.c_void_p(), C.c_int()
    if kind == "procaddr":
        rc = cu.lib.cuGetProcAddress_v2(name.encode(), C.byref(fn), int(version), C.c_uint64(0), C.byref(status))
    else:
        rc = cu.lib.cuGetProcAddress(name.encode(), C.byref(fn), int(version), C.c_uint64(0))
    cu.check(rc, f"cuGetProcAddress {name}")
    return ARRAY_FN(fn.value)


def arrays_until_refused(fn, desc, limit=16):
    """Creates arrays from desc until refused or `limit` are made: (handles, last code)."""
    made, rc = [], 0
    while len(made) < limit:
        a = C.c_void_p()
        rc = fn(C.byref(a), C.cast(C.byref(desc), C.c_void_p))
        if rc != 0:
            break
        made.append(a)
    return made, rc


def cmd_array_v1(cu, how):
    # 16384 x 16384 and 1024 x 1024 x 256 single floats: 1 GiB each.
    d2 = ArrayDescV1(16384, 16384, CU_AD_FORMAT_FLOAT, 1)
    d3 = Array3DDescV1(1024, 1024, 256, CU_AD_FORMAT_FLOAT, 1, 0)
    res = {}
    for key, name, desc in [("2d", "cuArrayCreate", d2), ("3d", "cuArray3DCreate", d3), ("again", "cuArrayCreate", d2)]:
        made, rc = arrays_until_refused(v1_entry(cu, how, name), desc)
        res[key] = {"gib": len(made), "refused": rc, "destroyed": [cu.lib.cuArrayDestroy(a) for a in made]}
    return res


class MemLocation(C.Structure):
    _fields_ = [("type", C.c_int), ("id", C.c_int)]


class MemAllocationProp(C.Structure):
    _fields_ = [("type", C.c_int), ("requestedHandleTypes", C.c_int), ("location", MemLocation),
                ("win32HandleMetaData", C.c_void_p), ("allocFlags", C.c_ubyte * 8)]


GIB = 1 << 30


def vmm_create_mapped_twice(cu):
    """One 1 GiB handle mapped at two addresses, then released while both map it: (rc, mappings)."""
    prop = MemAllocationProp(type=1, location=MemLocation(1, 0))  # pinned, on device 0
    h, va = C.c_uint64(), C.c_uint64()
    rc = cu.lib.cuMemCreate(C.byref(h), C.c_size_t(GIB), C.byref(prop), C.c_ulonglong(0))
    if rc != 0:
        return rc, []
    cu.check(cu.lib.cuMemAddressReserve(C.byref(va), C.c_size_t(2 * GIB), C.c_size_t(0), C.c_uint64(0),
                                        C.c_ulonglong(0)), "cuMemAddressReserve")
    maps = [va.value, va.value + GIB]
    for m in maps:
        cu.check(cu.lib.cuMemMap(C.c_uint64(m), C.c_size_t(GIB), C.c_size_t(0), h, C.c_ulonglong(0)), "cuMemMap")
    cu.check(cu.lib.cuMemRelease(h), "cuMemRelease")
    return 0, maps


def vmm_unmap(cu, m):
    cu.check(cu.lib.cuMemUnmap(C.c_uint64(m), C.c_size_t(GIB)), "cuMemUnmap")


def cmd_vmm_release_mapped(cu):
    held, rc = [], 0
    while len(held) < 8:
        rc, maps = vmm_create_mapped_twice(cu)
        if rc != 0:
            break
        held.append(maps)
    res = {"held": len(held), "refused": rc, "free_released": cu.mem_info()[0]}
    for first, _ in held:
        vmm_unmap(cu, first)
    res["free_first_unmaps"] = cu.mem_info()[0]
    for _, last in held:
        vmm_unmap(cu, last)
    res["free_last_unmaps"] = cu.mem_info()[0]
    for first, _ in held:
        cu.check(cu.lib.cuMemAddressFree(C.c_uint64(first), C.c_size_t(2 * GIB)), "cuMemAddressFree")
    again = []
    while len(again) < 8:
        rc, maps = vmm_create_mapped_twice(cu)
        if rc != 0:
            break
        again.append(maps[0])
    res["held_again"] = len(again)
    # Both mappings of a handle lie back to back: one call unmaps them.
    res["unmap_both"] = [cu.lib.cuMemUnmap(C.c_uint64(m), C.c_size_t(2 * GIB)) for m in again]
    res["free_both_unmapped"] = cu.mem_info()[0]
    return res


def cmd_vmm_retain(cu):
    """NCCL's free: cuMemRetainAllocationHandle on the address, release, unmap, release."""
    prop = MemAllocationProp(type=1, location=MemLocation(1, 0))
    h, h2, va = C.c_uint64(), C.c_uint64(), C.c_uint64()
    cu.check(cu.lib.cuMemCreate(C.byref(h), C.c_size_t(GIB), C.byref(prop), C.c_ulonglong(0)), "cuMemCreate")
    cu.check(cu.lib.cuMemAddressReserve(C.byref(va), C.c_size_t(GIB), C.c_size_t(0), C.c_uint64(0),
                                        C.c_ulonglong(0)), "cuMemAddressReserve")
    cu.check(cu.lib.cuMemMap(va, C.c_size_t(GIB), C.c_size_t(0), h, C.c_ulonglong(0)), "cuMemMap")
    res = {"free_mapped": cu.mem_info()[0]}
    cu.check(cu.lib.cuMemRetainAllocationHandle(C.byref(h2), C.c_void_p(va.value)), "cuMemRetainAllocationHandle")
    cu.check(cu.lib.cuMemRelease(h2), "cuMemRelease")
    res["free_retain_released"] = cu.mem_info()[0]
    vmm_unmap(cu, va.value)
    res["free_unmapped"] = cu.mem_info()[0]
    cu.check(cu.lib.cuMemRelease(h), "cuMemRelease")
    res["free_released"] = cu.mem_info()[0]
    return res


class MemPoolProps(C.Structure):
    _fields_ = [("allocType", C.c_int), ("handleTypes", C.c_int), ("location", MemLocation),
                ("win32SecurityAttributes", C.c_void_p), ("maxSize", C.c_size_t), ("usage", C.c_ushort),
                ("reserved", C.c_ubyte * 54)]


CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 4, 5, 7


def pool_attr(cu, pool, attr):
    v = C.c_uint64()
    cu.check(cu.lib.cuMemPoolGetAttribute(pool, attr, C.byref(v)), "cuMemPoolGetAttribute")
    return v.value


def alloc_free_sync(cu, pool, size):
    """Allocates size from pool (the device's current pool when None), frees it, synchronizes."""
    p = C.c_uint64()
    rc = (cu.lib.cuMemAllocFromPoolAsync(C.byref(p), C.c_size_t(size), pool, None) if pool
          else cu.lib.cuMemAllocAsync(C.byref(p), C.c_size_t(size), None))
    if rc == 0:
        cu.check(cu.lib.cuMemFreeAsync(p, None), "cuMemFreeAsync")
        cu.check(cu.lib.cuStreamSynchronize(None), "cuStreamSynchronize")
    return rc


def pool_keeping_everything(cu):
    pool = C.c_void_p()
    props = MemPoolProps(allocType=1, location=MemLocation(1, 0))
    cu.check(cu.lib.cuMemPoolCreate(C.byref(pool), C.byref(props)), "cuMemPoolCreate")
    keep = C.c_uint64(2**64 - 1)
    cu.check(cu.lib.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, C.byref(keep)),
             "cuMemPoolSetAttribute")
    return pool


def cmd_pool_reserve(cu):
    res = {"default": alloc_free_sync(cu, None, GIB), "free_default": cu.mem_info()[0]}
    pools, rc = [], 0
    while len(pools) < 8:
        pool = pool_keeping_everything(cu)
        rc = alloc_free_sync(cu, pool, GIB)
        if rc != 0:
            cu.check(cu.lib.cuMemPoolDestroy(pool), "cuMemPoolDestroy")
            break
        pools.append(pool)
    res.update(pools_kept=len(pools), refused=rc, free_kept=cu.mem_info()[0],
               reserved=[pool_attr(cu, p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) for p in pools],
               used=[pool_attr(cu, p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) for p in pools])
    res["reuse"] = alloc_free_sync(cu, pools[0], GIB)
    res["free_reused"] = cu.mem_info()[0]
    cu.check(cu.lib.cuMemPoolTrimTo(pools[0], C.c_size_t(0)), "cuMemPoolTrimTo")
    res["free_trimmed"] = cu.mem_info()[0]
    cu.check(cu.lib.cuMemPoolDestroy(pools[1]), "cuMemPoolDestroy")
    res["free_destroyed"] = cu.mem_info()[0]
    return res


COMMANDS = {"meminfo-null": cmd_meminfo_null, "free-unknown": cmd_free_unknown, "alloc-and-exit": cmd_alloc_and_exit,
            "array-v1": cmd_array_v1, "vmm-release-mapped": cmd_vmm_release_mapped,
            "vmm-retain": cmd_vmm_retain, "pool-reserve": cmd_pool_reserve}

if __name__ == "__main__":
    print(json.dumps(COMMANDS[sys.argv[1]](Cuda(0), *sys.argv[2:])), flush=True)
