"""Run inside a tenant: reports, for driver entries found through cuGetProcAddress_v2 and
through dlsym, which loaded object the pointer lies in (the interposer or the driver).
Prints one JSON object."""
import ctypes
import json


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def main():
    libc = ctypes.CDLL(None)
    cu = ctypes.CDLL("libcuda.so.1")
    assert cu.cuInit(0) == 0

    def owner(ptr):
        info = DlInfo()
        if not ptr or not libc.dladdr(ctypes.c_void_p(ptr), ctypes.byref(info)):
            return None
        return info.dli_fname.decode().rsplit("/", 1)[-1]

    out = {}
    for name, version in [("cuMemAdvise", 12020), ("cuLaunchKernel", 13000), ("cuStreamSynchronize", 13000),
                          ("cuStreamQuery", 13000), ("cuModuleGetFunction", 13000), ("cuGraphLaunch", 13000),
                          ("cuMemAlloc", 13000), ("cuMemAlloc", 3020), ("cuMemFree", 13000),
                          ("cuMemCreate", 13000), ("cuGetProcAddress", 13000)]:
        fn, status = ctypes.c_void_p(), ctypes.c_int()
        rc = cu.cuGetProcAddress_v2(name.encode(), ctypes.byref(fn), version, 0, ctypes.byref(status))
        out[f"procaddr:{name}@{version}"] = owner(fn.value) if rc == 0 else f"error {rc}"
    for name in ["cuLaunchKernel", "cuMemcpyHtoD_v2", "cuMemsetD8_v2", "cuMemAlloc_v2", "cuMemGetInfo_v2"]:
        out[f"dlsym:{name}"] = owner(ctypes.cast(getattr(cu, name), ctypes.c_void_p).value)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
