/* ipc_probe: shares device memory between processes through the CUDA driver API, for
 * test_quota_ipc.py. test_quota_ipc.py compiles it against build/lib/sim (it needs no
 * build step of its own) and runs it as exporter and as importer.
 *
 *   ipc_probe export-ipc SIZE               cuMemAlloc + cuIpcGetMemHandle; prints the handle
 *   ipc_probe export-vmm SIZE SOCKET        cuMemCreate (POSIX fd) + cuMemExportToShareableHandle;
 *                                           hands the descriptor to whoever connects to SOCKET
 *   ipc_probe import-ipc PATH HANDLE CHUNK BIG
 *   ipc_probe import-vmm PATH SOCKET SIZE CHUNK BIG
 *   ipc_probe errors                        misuse within one process; prints the codes
 *
 * Exporters print one JSON line when ready and hold everything until stdin closes. Importers
 * run a fixed script (see import_ipc, import_vmm) and print one JSON line of results. PATH is
 * how the importer finds the functions gpuslice hooks: "direct" (linked symbols), "dlsym"
 * (dlopen + dlsym), "procaddr" (cuGetProcAddress_v2 at 13000), "procaddr-10020" (at 10020,
 * which hands out the first cuIpcOpenMemHandle ABI) or "legacy" (cuGetProcAddress). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gs-cuda.h"

#define MIB (1024ULL * 1024)
#define MAX_CHUNKS 4096

static void die(const char *what, int rc)
{
  printf("{\"error\":\"%s\",\"rc\":%d}\n", what, rc);
  exit(1);
}

#define TRY(call)            \
  do {                       \
    CUresult rc_ = (call);   \
    if (rc_ != CUDA_SUCCESS) \
      die(#call, (int) rc_); \
  } while (0)

/* The functions gpuslice hooks, found the way PATH says. */
static struct {
  CUresult (*ipc_open)(CUdeviceptr *, CUipcMemHandle, unsigned int);
  CUresult (*ipc_close)(CUdeviceptr);
  CUresult (*alloc)(CUdeviceptr *, size_t);
  CUresult (*free_)(CUdeviceptr);
  CUresult (*info)(size_t *, size_t *);
  CUresult (*import)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*release)(CUmemGenericAllocationHandle);
} F;

struct entry {
  void **slot;
  const char *symbol; /* exported name */
  const char *base;   /* name for cuGetProcAddress */
};

static const struct entry entries[] = {
  { (void **) &F.ipc_open, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle" },
  { (void **) &F.ipc_close, "cuIpcCloseMemHandle", "cuIpcCloseMemHandle" },
  { (void **) &F.alloc, "cuMemAlloc_v2", "cuMemAlloc" },
  { (void **) &F.free_, "cuMemFree_v2", "cuMemFree" },
  { (void **) &F.info, "cuMemGetInfo_v2", "cuMemGetInfo" },
  { (void **) &F.import, "cuMemImportFromShareableHandle", "cuMemImportFromShareableHandle" },
  { (void **) &F.map, "cuMemMap", "cuMemMap" },
  { (void **) &F.release, "cuMemRelease", "cuMemRelease" },
};
#define NENTRIES (sizeof(entries) / sizeof(entries[0]))

static void resolve_direct(void)
{
  F.ipc_open = cuIpcOpenMemHandle_v2;
  F.ipc_close = cuIpcCloseMemHandle;
  F.alloc = cuMemAlloc_v2;
  F.free_ = cuMemFree_v2;
  F.info = cuMemGetInfo_v2;
  F.import = cuMemImportFromShareableHandle;
  F.map = cuMemMap;
  F.release = cuMemRelease;
}

static void resolve(const char *path)
{
  if (strcmp(path, "direct") == 0) {
    resolve_direct();
    return;
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h)
    die("dlopen", 0);
  for (size_t i = 0; i < NENTRIES; i++) {
    CUresult rc = CUDA_SUCCESS;
    CUdriverProcAddressQueryResult st;
    if (strcmp(path, "dlsym") == 0)
      *entries[i].slot = dlsym(h, entries[i].symbol);
    else if (strcmp(path, "procaddr") == 0)
      rc = cuGetProcAddress_v2(entries[i].base, entries[i].slot, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                               &st);
    else if (strcmp(path, "procaddr-10020") == 0)
      rc = cuGetProcAddress_v2(entries[i].base, entries[i].slot, 10020, CU_GET_PROC_ADDRESS_DEFAULT,
                               &st);
    else if (strcmp(path, "legacy") == 0)
      rc = cuGetProcAddress(entries[i].base, entries[i].slot, 13000, CU_GET_PROC_ADDRESS_DEFAULT);
    else
      die("unknown path", 0);
    if (rc != CUDA_SUCCESS || !*entries[i].slot)
      die(entries[i].base, (int) rc);
  }
}

static void context(void)
{
  CUdevice dev;
  CUcontext ctx;
  TRY(cuInit(0));
  TRY(cuDeviceGet(&dev, 0));
  TRY(cuDevicePrimaryCtxRetain(&ctx, dev));
  TRY(cuCtxSetCurrent(ctx));
}

/* Allocates CHUNK after CHUNK until the driver (or gpuslice) refuses, frees them all, and
 * returns how many it got. */
static int fill(size_t chunk)
{
  static CUdeviceptr p[MAX_CHUNKS];
  int n = 0;
  while (n < MAX_CHUNKS && F.alloc(&p[n], chunk) == CUDA_SUCCESS)
    n++;
  for (int i = 0; i < n; i++)
    TRY(F.free_(p[i]));
  return n;
}

static unsigned long long used(void)
{
  size_t free_, total;
  TRY(F.info(&free_, &total));
  return (unsigned long long) (total - free_);
}

static void wait_stdin(void)
{
  char buf[64];
  while (read(0, buf, sizeof(buf)) > 0)
    ;
}

/* ---- exporters ---- */

static int export_ipc(size_t size)
{
  CUdeviceptr p;
  CUipcMemHandle h;
  context();
  TRY(cuMemAlloc_v2(&p, size));
  TRY(cuMemsetD8_v2(p, 0x5a, 4096)); /* a marker; touching it all would cost RAM */
  TRY(cuIpcGetMemHandle(&h, p));
  printf("{\"ready\":true,\"pid\":%d,\"handle\":\"", (int) getpid());
  for (size_t i = 0; i < sizeof(h.reserved); i++)
    printf("%02x", (unsigned char) h.reserved[i]);
  printf("\"}\n");
  fflush(stdout);
  wait_stdin();
  TRY(cuMemFree_v2(p));
  return 0;
}

static int listen_on(const char *path)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || bind(s, (struct sockaddr *) &a, sizeof(a)) < 0 || listen(s, 8) < 0)
    die("listen", 0);
  return s;
}

static void send_fd(int conn, int fd)
{
  char byte = 'x';
  char ctl[CMSG_SPACE(sizeof(int))];
  struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
  struct msghdr m = {
    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)
  };
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  if (sendmsg(conn, &m, 0) != 1)
    die("sendmsg", 0);
}

/* Serves the descriptor to every importer that connects, until stdin closes. */
static int export_vmm(size_t size, const char *sock)
{
  CUmemGenericAllocationHandle h;
  CUdeviceptr va;
  int fd = -1;
  CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                               .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                               .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
  CUmemAccessDesc acc = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
  context();
  TRY(cuMemCreate(&h, size, &prop, 0));
  TRY(cuMemAddressReserve(&va, size, 0, 0, 0));
  TRY(cuMemMap(va, size, 0, h, 0));
  TRY(cuMemSetAccess(va, size, &acc, 1));
  TRY(cuMemsetD8_v2(va, 0x5a, 4096));
  TRY(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  int s = listen_on(sock);
  printf("{\"ready\":true,\"pid\":%d}\n", (int) getpid());
  fflush(stdout);
  for (;;) {
    struct pollfd p[2] = { { .fd = 0, .events = POLLIN }, { .fd = s, .events = POLLIN } };
    char buf[64];
    if (poll(p, 2, -1) < 0)
      die("poll", 0);
    if (p[0].revents && read(0, buf, sizeof(buf)) <= 0)
      return 0;
    int conn = p[1].revents ? accept(s, NULL, NULL) : -1;
    if (conn >= 0) {
      send_fd(conn, fd);
      close(conn);
    }
  }
}

/* ---- importers ---- */

static CUipcMemHandle parse_handle(const char *hex)
{
  CUipcMemHandle h;
  memset(&h, 0, sizeof(h));
  for (size_t i = 0; i < sizeof(h.reserved) && hex[2 * i] && hex[2 * i + 1]; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    h.reserved[i] = (char) v;
  }
  return h;
}

/* Open, fill the rest of the quota, close, fill again; then open while most of the quota is
 * held (refused), and open once more after letting go (granted, so the refusal let go too). */
static int import_ipc(const char *path, const char *hex, size_t chunk, size_t big)
{
  CUipcMemHandle h = parse_handle(hex);
  CUdeviceptr p = 0, p2 = 0, b = 0;
  size_t size = 0;
  context();
  resolve(path);
  unsigned long long used0 = used();
  int rc_open = F.ipc_open(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  if (rc_open == CUDA_SUCCESS)
    TRY(cuMemGetAddressRange_v2(NULL, &size, p));
  unsigned long long used_open = used();
  unsigned char byte = 0;
  if (rc_open == CUDA_SUCCESS)
    TRY(cuMemcpyDtoH_v2(&byte, p, 1));
  int chunks_open = fill(chunk);
  int rc_close = rc_open == CUDA_SUCCESS ? (int) F.ipc_close(p) : -1;
  unsigned long long used_closed = used();
  int chunks_closed = fill(chunk);
  TRY(F.alloc(&b, big));
  int rc_over = F.ipc_open(&p2, h, 0);
  if (rc_over == CUDA_SUCCESS)
    F.ipc_close(p2);
  TRY(F.free_(b));
  int rc_again = F.ipc_open(&p2, h, 0);
  int rc_close_again = rc_again == CUDA_SUCCESS ? (int) F.ipc_close(p2) : -1;
  int chunks_end = fill(chunk);
  printf(
    "{\"path\":\"%s\",\"rc_open\":%d,\"size\":%zu,\"byte\":%d,\"used_before\":%llu,\"used_open\":%"
    "llu,"
    "\"chunks_open\":%d,\"rc_close\":%d,\"used_closed\":%llu,\"chunks_closed\":%d,\"rc_over\":%d,"
    "\"rc_again\":%d,\"rc_close_again\":%d,\"chunks_end\":%d}\n",
    path, rc_open, size, byte, used0, used_open, chunks_open, rc_close, used_closed, chunks_closed,
    rc_over, rc_again, rc_close_again, chunks_end);
  return 0;
}

static int receive_fd(const char *sock)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  char byte, ctl[CMSG_SPACE(sizeof(int))];
  struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
  struct msghdr m = {
    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)
  };
  int fd = -1;
  snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect(s, (struct sockaddr *) &a, sizeof(a)) < 0 || recvmsg(s, &m, 0) != 1)
    die("receive fd", 0);
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  if (!c || c->cmsg_type != SCM_RIGHTS)
    die("no fd", 0);
  memcpy(&fd, CMSG_DATA(c), sizeof(int));
  close(s);
  return fd;
}

struct vmm_view {
  CUmemGenericAllocationHandle h;
  CUdeviceptr va;
  size_t size;
};

/* Maps [from, upto) of the handle at the same offset of the reservation, in pieces of
 * `piece` bytes. Returns the first failure. */
static int map_pieces(struct vmm_view *v, size_t from, size_t upto, size_t piece)
{
  CUmemAccessDesc acc = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
  for (size_t off = from; off < upto; off += piece) {
    CUresult rc = F.map(v->va + off, piece, off, v->h, 0);
    if (rc != CUDA_SUCCESS)
      return rc;
    TRY(cuMemSetAccess(v->va + off, piece, &acc, 1));
  }
  return CUDA_SUCCESS;
}

static void unmap_release(struct vmm_view *v, size_t mapped)
{
  if (mapped)
    TRY(cuMemUnmap(v->va, mapped));
  TRY(F.release(v->h));
}

/* Import, map whole, fill, release, fill; import and map while most of the quota is held
 * (refused); import and map in two halves (each half charged), fill, release, fill. */
static int import_vmm(const char *path, const char *sock, size_t size, size_t chunk, size_t big)
{
  struct vmm_view v = { .size = size };
  CUdeviceptr b = 0;
  context();
  resolve(path);
  int fd = receive_fd(sock);
  TRY(cuMemAddressReserve(&v.va, size, 0, 0, 0));
  unsigned long long used0 = used();
  int rc_import = F.import(&v.h, (void *) (intptr_t) fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (rc_import != CUDA_SUCCESS)
    die("import", rc_import);
  unsigned long long used_import = used();
  int rc_map = map_pieces(&v, 0, size, size);
  unsigned char byte = 0;
  if (rc_map == CUDA_SUCCESS)
    TRY(cuMemcpyDtoH_v2(&byte, v.va, 1));
  unsigned long long used_map = used();
  int chunks_mapped = fill(chunk);
  unmap_release(&v, rc_map == CUDA_SUCCESS ? size : 0);
  unsigned long long used_released = used();
  int chunks_released = fill(chunk);

  TRY(F.alloc(&b, big));
  TRY(F.import(&v.h, (void *) (intptr_t) fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  int rc_map_over = map_pieces(&v, 0, size, size);
  unmap_release(&v, rc_map_over == CUDA_SUCCESS ? size : 0);
  TRY(F.free_(b));

  TRY(F.import(&v.h, (void *) (intptr_t) fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  int rc_half = map_pieces(&v, 0, size / 2, size / 2);
  unsigned long long used_half = used();
  int rc_halves = rc_half == CUDA_SUCCESS ? map_pieces(&v, size / 2, size, size / 2) : rc_half;
  unsigned long long used_halves = used();
  int chunks_halves = fill(chunk);
  unmap_release(&v, rc_halves == CUDA_SUCCESS ? size : 0);
  int chunks_end = fill(chunk);
  printf("{\"path\":\"%s\",\"rc_import\":%d,\"rc_map\":%d,\"byte\":%d,\"used_before\":%llu,\"used_"
         "import\":%llu,"
         "\"used_map\":%llu,\"chunks_mapped\":%d,\"used_released\":%llu,\"chunks_released\":%d,"
         "\"rc_map_over\":%d,\"used_half\":%llu,\"used_halves\":%llu,\"chunks_halves\":%d,\"chunks_"
         "end\":%d}\n",
         path, rc_import, rc_map, byte, used0, used_import, used_map, chunks_mapped, used_released,
         chunks_released, rc_map_over, used_half, used_halves, chunks_halves, chunks_end);
  return 0;
}

/* What the driver answers to misuse that needs no second process. */
static int errors(void)
{
  CUdeviceptr p, q = 0;
  CUipcMemHandle h, junk;
  CUmemGenericAllocationHandle vh, imp = 0;
  int fd = -1;
  CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                               .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
  context();
  TRY(cuMemAlloc_v2(&p, MIB));
  TRY(cuIpcGetMemHandle(&h, p));
  memset(&junk, 0x33, sizeof(junk));
  int own = cuIpcOpenMemHandle_v2(&q, h, 0);
  int garbage = cuIpcOpenMemHandle_v2(&q, junk, 0);
  int bad_flags = cuIpcOpenMemHandle_v2(&q, h, 2);
  int close_unknown = cuIpcCloseMemHandle(p);
  int get_unknown = cuIpcGetMemHandle(&h, 4096);
  TRY(cuMemCreate(&vh, 2 * MIB, &prop, 0));
  int export_unrequested =
    cuMemExportToShareableHandle(&fd, vh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  int export_win32 = cuMemExportToShareableHandle(&fd, vh, CU_MEM_HANDLE_TYPE_WIN32, 0);
  int import_stdin = cuMemImportFromShareableHandle(&imp, (void *) (intptr_t) 0,
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  TRY(cuMemRelease(vh));
  TRY(cuMemFree_v2(p));
  printf("{\"own\":%d,\"garbage\":%d,\"bad_flags\":%d,\"close_unknown\":%d,\"get_unknown\":%d,"
         "\"export_unrequested\":%d,\"export_win32\":%d,\"import_stdin\":%d}\n",
         own, garbage, bad_flags, close_unknown, get_unknown, export_unrequested, export_win32,
         import_stdin);
  return 0;
}

static size_t mib(const char *s)
{
  return (size_t) strtoull(s, NULL, 10) * MIB;
}

int main(int argc, char **argv)
{
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 2 && strcmp(argv[1], "errors") == 0)
    return errors();
  if (argc == 3 && strcmp(argv[1], "export-ipc") == 0)
    return export_ipc(mib(argv[2]));
  if (argc == 4 && strcmp(argv[1], "export-vmm") == 0)
    return export_vmm(mib(argv[2]), argv[3]);
  if (argc == 6 && strcmp(argv[1], "import-ipc") == 0)
    return import_ipc(argv[2], argv[3], mib(argv[4]), mib(argv[5]));
  if (argc == 7 && strcmp(argv[1], "import-vmm") == 0)
    return import_vmm(argv[2], argv[3], mib(argv[4]), mib(argv[5]), mib(argv[6]));
  fprintf(stderr, "usage: see the top of ipc_probe.c\n");
  return 2;
}
