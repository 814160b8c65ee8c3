/* Who is calling the API, and what they may see. The socket is open to every local user
 * (mode 0666 by default); the kernel tells the daemon who connected (SO_PEERCRED), and that
 * decides: a user sees and changes only their own tenants, while root, the daemon's own
 * user and the members of the admin group (`gpuslice` by default) see and change all.
 * Group membership is the user's as the system database records it (getgrouplist), so a
 * process cannot gain it by changing its own groups. */
#include "daemon.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool in_group(uid_t uid, gid_t primary, const char *group)
{
  struct group gr, *g = NULL;
  struct passwd pw, *p = NULL;
  char gbuf[4096], pbuf[4096];
  gid_t groups[256];
  int n = (int) (sizeof(groups) / sizeof(groups[0]));

  if (!group || !*group || getgrnam_r(group, &gr, gbuf, sizeof(gbuf), &g) != 0 || !g)
    return false;
  if (primary == g->gr_gid)
    return true;
  if (getpwuid_r(uid, &pw, pbuf, sizeof(pbuf), &p) != 0 || !p)
    return false;
  if (getgrouplist(p->pw_name, p->pw_gid, groups, &n) < 0)
    return false;
  for (int i = 0; i < n; i++)
    if (groups[i] == g->gr_gid)
      return true;
  return false;
}

int access_peer(int fd, const char *admin_group, struct peer *p, gs_error_t *err)
{
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
    return gs_make_error(err, errno, "SO_PEERCRED");
  p->uid = cred.uid;
  p->gid = cred.gid;
  p->pid = cred.pid;
  p->admin = cred.uid == 0 || cred.uid == geteuid() || in_group(cred.uid, cred.gid, admin_group);
  return 0;
}

bool access_may_see(const struct peer *p, const struct tenant *t)
{
  return p->admin || p->uid == t->uid;
}
