/* hookd hook client, compiled. Built by `hookd spawn` when a C compiler is present (else the
 * bash client, hooks/client.sh, is used); do not edit the built copy (re-spawn rebuilds it).
 *
 * Usage (as the harness runs it, via sh -c): hook-client-c HARNESS BUILDER [DEADLINE_MS [hold|wake]]
 *   or, exec form (no shell: Claude Code's `command` + `args`):
 *   hook-client-c --home HOOKD_HOME HARNESS BUILDER DEADLINE_MS hook|hold|wake [# hookd builder=B]
 *   (a home whose bin/ is gone: exit 0 at once; arguments after the mode are hookd's tag)
 *   stdin:  one hook payload (JSON bytes); may be held open, may arrive slowly
 *   stdout: the daemon's JSON reply, or nothing
 *   exit:   always 0 (wake mode: 2 when it wakes the agent); never runs longer than
 *           DEADLINE_MS (default 5000)
 *
 * The same contract as client.sh, line for line; what differs is the transport: the payload
 * streams to the daemon over its Unix socket (access is the socket's 0600 mode, so no token)
 * as a chunked HTTP request. The daemon answers as soon as one complete JSON object has
 * arrived. Only a reply that proves the payload durable ends the client without a spool: a
 * 2xx (its body, one JSON object, is printed), or a 4xx carrying X-Hookd-Stored (the raw
 * bytes were stored). Anything else (a 5xx, a 4xx without that header, no reply, a torn one)
 * and a daemon that cannot be reached or is not trusted: the payload goes to
 * HOOKD_HOME/spool/BUILDER/ (temp file + rename), or, when that cannot be written (a full
 * disk), to a private spool outside the home (spool_outside); the daemon ingests both. A
 * payload still arriving at the deadline is left to a detached reader (detach), which spools
 * it whole once it has arrived; the hook itself ends at the deadline.
 * hold mode (the PermissionRequest hook): the daemon may hold the reply, up to DEADLINE_MS,
 * for a human's remote answer. A daemon that stops (a restart) lets it go with a 2xx carrying
 * X-Hookd-Hold: <interaction id>: the client then reconnects, within its deadline, and posts
 * the same payload (same delivery id) with that header, and the daemon holds it again.
 * wake mode (an async + asyncRewake Stop hook): wait, up to DEADLINE_MS, for a message to the
 * idle agent; when one comes, print it to stderr and exit 2. A wake never spools.
 *
 * Trust: the socket is used only when its directory is owned by this user with mode 0700 (not
 * a symlink) and the process listening on it runs as this user (SO_PEERCRED, getpeereid
 * elsewhere); bin/socket-path only when bin/ is such a directory and the file is this user's,
 * private, not a symlink. Otherwise the payload is spooled, never sent.
 *
 * Nothing is baked in: one build serves every home. The home is where the client lives
 * (argv[0] is HOOKD_HOME/bin/hook-client-c: the generated command execs it by its absolute
 * path), or, in the exec form, the --home argument; the socket is HOOKD_HOME/run/hookd.sock, or, when that path is longer than
 * MAX_SOCKET_PATH (the daemon then binds a short path elsewhere), the path written in
 * HOOKD_HOME/bin/socket-path. Plain POSIX (poll, Unix sockets) plus the peer's credentials;
 * built with -static where the C library allows it.
 */
#ifdef __linux__
#define _GNU_SOURCE              /* struct ucred (SO_PEERCRED) */
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef MAX_SOCKET_PATH
#define MAX_SOCKET_PATH 100      /* hookd.config.MAX_SOCKET_PATH; the build passes it */
#endif

#define SLICE_MS 20              /* wait on one fd this long before checking the other */
#define REPLY_MAX (1 << 20)      /* the daemon's replies are small; more is not ours */
#define SPOOL_INLINE_MAX (1 << 20) /* larger payloads are spooled by a detached writer */
#define RETRY_MS 50              /* a held hook whose daemon restarts retries this often */
#define DETACH_MS 60000          /* a payload still arriving at the deadline is read this much longer */

static const char *harness, *builder, *mode = "hook";
static char home[4096];          /* HOOKD_HOME */
static long long end_us;         /* the deadline, CLOCK_MONOTONIC microseconds */
static char id[64];
static char *buf;                /* stdin so far */
static size_t blen, bcap;
static int in_eof;
static int sock = -1;            /* the connection to the daemon, while one is open */
static int stored;               /* the daemon said it has the payload: never spool it */
static int writing;              /* the spool is being written */

static long long mono_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* milliseconds left before the deadline (rounded down, at least 1 while time is left); -1 once
 * it has passed */
static int left_ms(void) {
    long long r = end_us - mono_us();
    if (r <= 0) return -1;
    return r < 1000 ? 1 : (int)(r / 1000);
}

static int slice_ms(void) {
    int l = left_ms();
    return l < 0 ? -1 : (l < SLICE_MS ? l : SLICE_MS);
}

/* SIGTERM, SIGINT, SIGHUP (the harness's timeout, Esc): noted here, acted on by wait() */
static volatile sig_atomic_t stopped;
static void on_signal(int sig) { (void)sig; stopped = 1; }
static void spool(void);
static void detach(void);
static int whole(void);

/* poll(2), except that a stop signal (before or during the wait: the handler is installed
 * without SA_RESTART, so poll returns EINTR) ends the client: what has arrived is spooled
 * when it is one whole object (the daemon may not have stored it; if it did, the spool's
 * delivery id makes the copy a no-op), then exit 0 */
static int wait_fds(struct pollfd *p, nfds_t n, int timeout_ms) {
    int r = stopped ? -1 : poll(p, n, timeout_ms);
    if (stopped) {
        if (strcmp(mode, "wake") != 0 && !writing && blen && whole()) {
            in_eof = 1;  /* spool now: read no more */
            spool();
        }
        _exit(0);
    }
    return r;
}

static int grow(size_t need) {
    if (need <= bcap) return 0;
    size_t cap = bcap ? bcap : 65536;
    while (cap < need) cap *= 2;
    char *p = realloc(buf, cap);
    if (!p) return -1;
    buf = p;
    bcap = cap;
    return 0;
}

/* read stdin until EOF (0), until a slice passes with nothing new (1), or until the deadline (2) */
static int read_more(void) {
    for (;;) {
        int t = slice_ms();
        if (t < 0) return 2;
        struct pollfd p = {0, POLLIN, 0};
        int n = wait_fds(&p, 1, t);
        if (n < 0) {
            if (errno == EINTR) continue;
            return 0;
        }
        if (n == 0) return 1;
        if (grow(blen + 65536) < 0) return 0;
        ssize_t r = read(0, buf + blen, 65536);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return 0;  /* not readable: nothing more will come */
        }
        if (r == 0) return 0;
        blen += (size_t)r;
    }
}

/* buf holds one whole JSON object (cheap test: ends with } and the braces balance) */
static int whole(void) {
    size_t n = blen, o = 0, c = 0;
    while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r' || buf[n - 1] == '\n')) n--;
    if (!n || buf[n - 1] != '}') return 0;
    for (size_t i = 0; i < n; i++) {
        o += buf[i] == '{';
        c += buf[i] == '}';
    }
    return o == c;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* d is a directory only this user can use: not a symlink, owned by us, mode 0700 */
static int private_dir(const char *d) {
    struct stat st;
    return lstat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 07777) == 0700;
}

/* create d (0700) if missing; 0 when it is then a private directory of ours */
static int private_mkdir(const char *d) {
    mkdir(d, 0700);
    return private_dir(d) ? 0 : -1;
}

/* buf into DIR/.<id>.tmp, renamed to DIR/<id>.<harness>.json: 0 done, -1 failed (nothing left) */
static int spool_file(const char *dir) {
    char tmp[4400], dst[4400];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, id) >= sizeof tmp) return -1;
    snprintf(dst, sizeof dst, "%s/%s.%s.json", dir, id, harness);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    if (write_all(fd, buf, blen) < 0 || close(fd) < 0 || rename(tmp, dst) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The spool outside the home, for when the home's cannot be written (its disk is full):
 * BASE/spool-<key>/<builder>/, key the FNV-1a 64 hash of the home's path
 * (hookd.config.Home.outside_spool_roots), every level a private directory of ours, so that
 * nothing another user planted is written to. */
static int spool_outside(const char *base) {
    unsigned long long key = 14695981039346656037ULL;
    for (const unsigned char *c = (const unsigned char *)home; *c; c++) key = (key ^ *c) * 1099511628211ULL;
    char d[4400];
    if ((size_t)snprintf(d, sizeof d, "%s/spool-%016llx/%s", base, key, builder) >= sizeof d) return -1;
    char *sub = strrchr(d, '/');
    *sub = 0;
    if (private_mkdir(base) < 0 || private_mkdir(d) < 0) return -1;
    *sub = '/';
    return private_mkdir(d) < 0 ? -1 : spool_file(d);
}

/* the home's spool, else, in order, $XDG_RUNTIME_DIR/hookd (itself ours and 0700: it is the
 * login session's, on tmpfs), /dev/shm/hookd-<uid>, /tmp/hookd-<uid> */
static void write_spool(void) {
    char d[4400];
    snprintf(d, sizeof d, "%s/spool", home);
    mkdir(d, 0700);
    if ((size_t)snprintf(d, sizeof d, "%s/spool/%s", home, builder) < sizeof d) {
        mkdir(d, 0700);
        if (spool_file(d) == 0) return;
    }
    const char *x = getenv("XDG_RUNTIME_DIR");
    if (x && x[0] == '/' && private_dir(x) && (size_t)snprintf(d, sizeof d, "%s/hookd", x) < sizeof d &&
        spool_outside(d) == 0)
        return;
    snprintf(d, sizeof d, "/dev/shm/hookd-%lu", (unsigned long)geteuid());
    if (spool_outside(d) == 0) return;
    snprintf(d, sizeof d, "/tmp/hookd-%lu", (unsigned long)geteuid());
    spool_outside(d);
}

/* stdio on /dev/null, signals ignored, its own session: a child the harness neither waits for
 * (its pipes are closed here) nor stops (its signals go to the hook's process group) */
static void disown_self(int keep_stdin) {
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGTERM, &ign, NULL);
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGHUP, &ign, NULL);
    setsid();
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
        if (!keep_stdin) dup2(nul, 0);
        dup2(nul, 1);
        dup2(nul, 2);
        if (nul > 2) close(nul);
    }
    if (sock >= 0) close(sock);  /* the daemon sees this hook go when it goes */
    sock = -1;
}

/* The deadline passed while the payload was still arriving (field case B15(b): 3 bytes every
 * 200 ms). The harness is released now: this process exits 0 having printed nothing. A
 * detached child keeps stdin and reads on, until EOF, one whole object, or DETACH_MS more,
 * then spools what it has (the whole payload: the daemon records it once; the body the daemon
 * was cut off with is stored raw under <id>~cut). Returns only when there is no child (fork
 * failed): then what has arrived is spooled as before. */
static void detach(void) {
    pid_t c = fork();
    if (c < 0) return;
    if (c > 0) _exit(0);
    disown_self(1);
    end_us = mono_us() + (long long)DETACH_MS * 1000;
    while (!in_eof && !whole()) {
        int rc = read_more();
        if (rc == 2) break;
        if (rc == 0) in_eof = 1;
    }
    writing = 1;
    write_spool();
    _exit(0);
}

/* the daemon may not have the payload: keep it for it, then exit 0 */
static void spool(void) {
    if (strcmp(mode, "wake") == 0 || stored) _exit(0);
    /* never spool half a payload: stdin may still be arriving (slowly, or held open after
     * the object); read on until EOF, one whole object, or the deadline */
    while (!in_eof && !whole()) {
        int rc = read_more();
        if (rc == 2) break;
        if (rc == 0) in_eof = 1;
    }
    if (!blen) _exit(0);
    if (!in_eof && !whole()) detach();  /* the deadline, with the payload still arriving */
    writing = 1;
    if (blen <= SPOOL_INLINE_MAX) {
        write_spool();
        _exit(0);
    }
    /* A large payload can take longer to write than the deadline leaves (6 x 60 MB at once:
     * about a second): a detached child (its own session, so the harness's signals to this
     * hook do not reach it; stdio on /dev/null, so the harness does not wait for it) writes
     * it, and this process waits for it until the deadline, then goes. */
    int p[2];
    pid_t c = pipe(p) < 0 ? -1 : fork();
    if (c < 0) {
        write_spool();
        _exit(0);
    }
    if (c == 0) {
        disown_self(0);
        close(p[0]);
        write_spool();
        _exit(0);  /* closes p[1]: the parent's poll sees the end */
    }
    close(p[1]);
    struct pollfd w = {p[0], POLLIN, 0};
    while (!stopped && left_ms() > 0 && poll(&w, 1, left_ms()) < 0 && errno == EINTR) {
    }
    _exit(0);
}

/* write an iovec array to the (non-blocking) socket before the deadline: 0 done, -1 failed
 * (the daemon closed: it may have answered), -2 the deadline passed */
static int send_all(int s, struct iovec *v, int n) {
    while (n) {
        ssize_t w = writev(s, v, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
            int t = left_ms();
            if (t < 0) return -2;
            struct pollfd p = {s, POLLOUT, 0};
            wait_fds(&p, 1, t);
            continue;
        }
        while (n && (size_t)w >= v->iov_len) {
            w -= (ssize_t)v->iov_len;
            v++;
            n--;
        }
        if (n) {
            v->iov_base = (char *)v->iov_base + w;
            v->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* send `pre` (the request head, or NULL), then buf[from..blen) as one chunk, then the
 * last-chunk marker when `last`: one writev, so one wakeup of the daemon */
static int send_chunk(int s, const char *pre, size_t prelen, size_t from, int last) {
    char head[32];
    struct iovec v[5];
    int n = 0;
    if (pre) {
        v[n].iov_base = (char *)pre;
        v[n++].iov_len = prelen;
    }
    if (blen > from) {
        v[n].iov_base = head;
        v[n++].iov_len = (size_t)snprintf(head, sizeof head, "%zx\r\n", blen - from);
        v[n].iov_base = buf + from;
        v[n++].iov_len = blen - from;
        v[n].iov_base = "\r\n";
        v[n++].iov_len = 2;
    }
    if (last) {
        v[n].iov_base = "0\r\n\r\n";
        v[n++].iov_len = 5;
    }
    return n ? send_all(s, v, n) : 0;
}

static int valid(const char *s, const char *first, const char *rest) {
    if (!s || !*s || !strchr(first, *s)) return 0;
    for (s++; *s; s++)
        if (!strchr(rest, *s)) return 0;
    return 1;
}

#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define DIGITS "0123456789"

/* the working directory as bash's $PWD has it: $PWD from the environment when it names this
 * directory (keeps the symlinked path the user is in), else the physical path */
static const char *work_dir(char *out, size_t size) {
    const char *pwd = getenv("PWD");
    struct stat a, b;
    if (pwd && pwd[0] == '/' && stat(pwd, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return pwd;
    return getcwd(out, size);
}

/* the daemon's socket address, when its directory is one only this user can use: 0, else -1
 * (a directory another user created or can write, a symlink, an untrusted bin/socket-path) */
static int socket_addr(struct sockaddr_un *a) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if ((size_t)snprintf(a->sun_path, sizeof a->sun_path, "%s/run/hookd.sock", home) > MAX_SOCKET_PATH) {
        char f[4200];
        snprintf(f, sizeof f, "%s/bin", home);
        if (!private_dir(f)) return -1;
        snprintf(f, sizeof f, "%s/bin/socket-path", home);
        int fd = open(f, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return -1;
        struct stat st;
        ssize_t n = -1;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077))
            n = read(fd, a->sun_path, sizeof a->sun_path - 1);
        close(fd);
        if (n <= 0) return -1;
        a->sun_path[n] = 0;
        a->sun_path[strcspn(a->sun_path, "\n")] = 0;
    }
    char dir[sizeof a->sun_path];
    memcpy(dir, a->sun_path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (dir[0] != '/' || !slash || slash == dir) return -1;
    *slash = 0;
    return private_dir(dir) ? 0 : -1;
}

/* the process listening on the connected socket s runs as this user */
static int peer_is_us(int s) {
#ifdef SO_PEERCRED
    struct ucred c;
    socklen_t n = sizeof c;
    return getsockopt(s, SOL_SOCKET, SO_PEERCRED, &c, &n) == 0 && n == sizeof c && c.uid == geteuid();
#else
    uid_t u;
    gid_t g;
    return getpeereid(s, &u, &g) == 0 && u == geteuid();
#endif
}

/* a connected, trusted, non-blocking socket to the daemon; -1 when there is none (no daemon,
 * or a socket this user did not make) */
static int open_daemon(void) {
    struct sockaddr_un addr;
    if (socket_addr(&addr) < 0) return -1;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0) return -1;
    fcntl(s, F_SETFD, FD_CLOEXEC);
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);  /* every wait below is bounded */
    while (connect(s, (struct sockaddr *)&addr, sizeof addr) < 0) {
        if (errno == EINTR) continue;
        if (errno == EINPROGRESS) {
            struct pollfd p = {s, POLLOUT, 0};
            int t = left_ms(), err = 0;
            socklen_t len = sizeof err;
            if (t < 0 || wait_fds(&p, 1, t) <= 0 || getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
                close(s);
                return -1;
            }
            break;
        }
        if (errno == EAGAIN && left_ms() > 0) {  /* the daemon's backlog is full: retry shortly */
            wait_fds(NULL, 0, 1);
            continue;
        }
        close(s);  /* no daemon (refused, no socket file) */
        return -1;
    }
    if (!peer_is_us(s)) {
        close(s);
        return -1;
    }
    return s;
}

/* a held hook waiting for its restarting daemon: wait RETRY_MS (less when the deadline is
 * nearer), exit 0 once the deadline has passed */
static void pause_retry(void) {
    int t = left_ms();
    if (t < 0) _exit(0);
    wait_fds(NULL, 0, t < RETRY_MS ? t : RETRY_MS);
}

/* the value of header `name` (with its colon) in the reply head [resp, sep), or NULL; *len its length */
static const char *header(const char *resp, const char *sep, const char *name, size_t *len) {
    size_t nl = strlen(name);
    for (const char *h = strstr(resp, "\r\n"); h && h < sep; h = strstr(h + 2, "\r\n")) {
        if (strncasecmp(h + 2, name, nl) != 0) continue;
        const char *v = h + 2 + nl, *eol = strstr(v, "\r\n");
        while (*v == ' ') v++;
        *len = eol ? (size_t)(eol - v) : 0;
        return v;
    }
    return NULL;
}

int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    if (argc > 2 && strcmp(argv[1], "--home") == 0) {
        /* the exec form (hook-client-c --home HOOKD_HOME HARNESS BUILDER MS MODE TAG, run from
         * the build cache, not from the home): a home that was moved or deleted makes every
         * hook a silent no-op (what the shell form's `[ -x client ] || exit 0` does) */
        struct stat hs;
        char bin[sizeof home + 8];
        if (argv[2][0] != '/' || strlen(argv[2]) >= sizeof home) return 0;
        snprintf(bin, sizeof bin, "%s/bin", argv[2]);
        if (stat(bin, &hs) != 0 || !S_ISDIR(hs.st_mode)) return 0;
        snprintf(home, sizeof home, "%s", argv[2]);
        argv += 2;
        argc -= 2;
    } else {
        if (argc < 3) return 0;
        /* HOOKD_HOME: argv[0] minus "/bin/<name>" */
        const char *slash = strrchr(argv[0], '/');
        size_t hl0 = slash ? (size_t)(slash - argv[0]) : 0;
        if (hl0 < 4 || hl0 >= sizeof home || strncmp(argv[0] + hl0 - 4, "/bin", 4) != 0) return 0;
        memcpy(home, argv[0], hl0 - 4);
        home[hl0 - 4] = 0;
    }
    if (argc < 3) return 0;
    harness = argv[1];
    builder = argv[2];
    const char *deadline = argc > 3 ? argv[3] : "5000";
    if (argc > 4) mode = argv[4];
    if (!valid(harness, LOWER "-", LOWER "-")) return 0;
    if (!valid(builder, ALNUM, ALNUM "._-") || strlen(builder) > 64) return 0;  /* hookd.config.BUILDER_ID_RE */
    if (!valid(deadline, DIGITS, DIGITS) || strlen(deadline) > 9) return 0;
    const char *path;
    if (strcmp(mode, "hook") == 0) path = "";
    else if (strcmp(mode, "hold") == 0) path = "/hold";
    else if (strcmp(mode, "wake") == 0) path = "/wake";
    else return 0;

    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    end_us = mono_us() + atoll(deadline) * 1000;
    /* the delivery id: microseconds since the epoch (the spool's order), pid, a few random bits */
    snprintf(id, sizeof id, "%lld-%d-%ld", (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000, (int)getpid(),
             (long)((now.tv_nsec / 1000) ^ (long)getppid()) % 32768);

    int rc = read_more();
    if (rc == 2) spool();
    if (rc == 0) in_eof = 1;
    if (in_eof && !blen) return 0;

    /* claw sends no session id or cwd: the hook's cwd (claw's own) identifies the session.
     * Percent-encoded (a header value). */
    char cwdh[3 * 4096 + 32] = "";
    if (strncmp(harness, "claw", 4) == 0) {
        char raw[4096];
        const char *d = work_dir(raw, sizeof raw);
        if (d) {
            size_t k = (size_t)snprintf(cwdh, sizeof cwdh, "X-Hookd-Cwd: ");
            for (const unsigned char *c = (const unsigned char *)d; *c && k + 8 < sizeof cwdh; c++) {
                if (strchr(ALNUM "/._~-", *c)) cwdh[k++] = (char)*c;
                else k += (size_t)snprintf(cwdh + k, sizeof cwdh - k, "%%%02X", *c);
            }
            snprintf(cwdh + k, sizeof cwdh - k, "\r\n");
        }
    }
    char pid[16] = "", pidh[48] = "";
    const char *cp = getenv("CLAUDE_PID");
    for (size_t k = 0; cp && *cp && k + 1 < sizeof pid; cp++)
        if (*cp >= '0' && *cp <= '9') pid[k++] = *cp, pid[k] = 0;
    if (*pid) snprintf(pidh, sizeof pidh, "X-Hookd-Agent-Pid: %s\r\n", pid);

    /* held: the interaction a restarting daemon let this held hook go for (hold mode): the
     * payload is stored; reconnect and wait on it again until the deadline */
    char held[128] = "";
    static char resp[REPLY_MAX + 1];
    for (;;) {
        int s = sock = open_daemon();
        if (s < 0) {
            if (!*held) spool();
            pause_retry();
            continue;
        }
        char head[16384], dl[24], holdh[160] = "";
        if (*held) {
            in_eof = 1;  /* the daemon had the whole object: send just that */
            snprintf(dl, sizeof dl, "%d", left_ms() > 0 ? left_ms() : 1);
            snprintf(holdh, sizeof holdh, "X-Hookd-Hold: %s\r\n", held);
        } else {
            snprintf(dl, sizeof dl, "%s", deadline);
        }
        int hl = snprintf(head, sizeof head,
                          "POST /v1/hooks/%s/%s%s HTTP/1.1\r\nHost: hookd\r\nX-Hookd-Delivery: %s\r\n"
                          "X-Hookd-Deadline-Ms: %s\r\n%s%s%sContent-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                          harness, builder, path, id, dl, pidh, cwdh, holdh);
        if (hl < 0 || (size_t)hl >= sizeof head) spool();
        int r = send_chunk(s, head, (size_t)hl, 0, in_eof);
        /* all of it sent, or the daemon closed early (it may have answered: the reply decides) */
        if (r == -2 || (r == -1 && !in_eof)) spool();

        /* stdin is slow or held open: stream it until EOF, or until the daemon has seen one
         * complete object and answered */
        while (!in_eof) {
            int t = left_ms();
            if (t < 0) spool();
            struct pollfd p[2] = {{s, POLLIN, 0}, {0, POLLIN, 0}};
            int n = wait_fds(p, 2, t);
            if (n < 0 && errno != EINTR) spool();
            if (n <= 0) continue;
            if (p[0].revents) break;  /* the reply (or the daemon's close) is here */
            if (!p[1].revents) continue;
            size_t from = blen;
            if (grow(blen + 65536) < 0) spool();
            ssize_t got = read(0, buf + blen, 65536);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got > 0) blen += (size_t)got;
            else in_eof = 1;
            r = send_chunk(s, NULL, 0, from, in_eof);
            if (r == -2) spool();
            if (r == -1) break;  /* answered and closed? the reply decides */
        }

        /* the reply: read until the daemon closes */
        size_t rl = 0;
        for (;;) {
            int t = left_ms();
            if (t < 0) spool();
            struct pollfd p = {s, POLLIN, 0};
            int n = wait_fds(&p, 1, t);
            if (n < 0 && errno != EINTR) spool();
            if (n <= 0) continue;
            ssize_t got = read(s, resp + rl, REPLY_MAX - rl);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) break;
            rl += (size_t)got;
            if (rl == REPLY_MAX) break;
        }
        close(s);
        sock = -1;
        resp[rl] = 0;
        char *sep = strstr(resp, "\r\n\r\n");
        int status = 0;
        if (sep && strncmp(resp, "HTTP/1.", 7) == 0 && resp[8] == ' ') status = atoi(resp + 9);
        size_t vlen = 0;
        const char *v;
        if (status >= 400 && status < 500 && header(resp, sep, "x-hookd-stored:", &vlen) && vlen)
            return 0;  /* the daemon stored the raw bytes and said no */
        if (status < 200 || status >= 300) {
            if (!*held) spool();  /* not proven stored: keep the payload */
            pause_retry();        /* a restarting daemon: try again */
            continue;
        }
        char *body = sep + 4;
        size_t blen_reply = rl - (size_t)(body - resp);
        if (strcmp(mode, "hold") == 0 && (v = header(resp, sep, "x-hookd-hold:", &vlen)) && vlen &&
            vlen < sizeof held && !blen_reply) {
            memcpy(held, v, vlen);  /* the daemon is restarting: hold on, reconnect */
            held[vlen] = 0;
            if (!valid(held, ALNUM "_", ALNUM "_.~-")) return 0;
            stored = 1;
            pause_retry();
            continue;
        }
        /* the body must be complete (its length equals the Content-Length header) */
        long long clen = (v = header(resp, sep, "content-length:", &vlen)) ? atoll(v) : -1;
        if (clen < 0 || (size_t)clen != blen_reply) {
            if (!*held) spool();  /* a torn reply proves nothing */
            pause_retry();
            continue;
        }
        if (strcmp(mode, "wake") == 0) {
            if (!blen_reply) return 0;
            body[blen_reply] = '\n';
            write_all(2, body, blen_reply + 1);  /* wake the idle agent with it */
            return 2;
        }
        if (blen_reply && (body[0] != '{' || body[blen_reply - 1] != '}')) return 0;
        if (blen_reply) write_all(1, body, blen_reply);
        return 0;
    }
}
