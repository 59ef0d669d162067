/* hookd hook client, compiled. Built by `hookd spawn` when a C compiler is present (else the
 * bash client, hooks/client.sh, is used); do not edit the built copy (re-spawn rebuilds it).
 *
 * Usage (as the harness runs it, via sh -c): hook-client-c HARNESS BUILDER [DEADLINE_MS [hold|wake]]
 *   stdin:  one hook payload (JSON bytes); may be held open, may arrive slowly
 *   stdout: the daemon's JSON reply, or nothing
 *   exit:   always 0 (wake mode: 2 when it wakes the agent); never runs longer than
 *           DEADLINE_MS (default 5000)
 *
 * The same contract as client.sh, line for line; what differs is the transport: the payload
 * streams to the daemon over its Unix socket (access is the socket's 0600 mode, so no token)
 * as a chunked HTTP request. The daemon answers as soon as one complete JSON object has
 * arrived. When the daemon cannot be reached, the payload goes to HOOKD_HOME/spool/BUILDER/
 * (temp file + rename) and the daemon ingests it on start.
 * hold mode (the PermissionRequest hook): the daemon may hold the reply, up to DEADLINE_MS,
 * for a human's remote answer.
 * wake mode (an async + asyncRewake Stop hook): wait, up to DEADLINE_MS, for a message to the
 * idle agent; when one comes, print it to stderr and exit 2. A wake never spools.
 *
 * Nothing is baked in: one build serves every home. The home is where the client lives
 * (argv[0] is HOOKD_HOME/bin/hook-client-c: the generated command execs it by its absolute
 * path); the socket is HOOKD_HOME/run/hookd.sock, or, when that path is longer than
 * MAX_SOCKET_PATH (the daemon then binds a short path under /tmp), the path written in
 * HOOKD_HOME/bin/socket-path by `hookd spawn`. Plain POSIX (poll, Unix sockets); built with
 * -static where the C library allows it.
 */
#define _POSIX_C_SOURCE 200809L
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

static const char *harness, *builder, *mode = "hook";
static char home[4096];          /* HOOKD_HOME */
static long long end_us;         /* the deadline, CLOCK_MONOTONIC microseconds */
static char id[64];
static char *buf;                /* stdin so far */
static size_t blen, bcap;
static int in_eof;

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
static int whole(void);

/* poll(2), except that a stop signal (before or during the wait: the handler is installed
 * without SA_RESTART, so poll returns EINTR) ends the client: what has arrived is spooled
 * when it is one whole object (the daemon may not have stored it; if it did, the spool's
 * delivery id makes the copy a no-op), then exit 0 */
static int wait_fds(struct pollfd *p, nfds_t n, int timeout_ms) {
    int r = stopped ? -1 : poll(p, n, timeout_ms);
    if (stopped) {
        if (strcmp(mode, "wake") != 0 && blen && whole()) {
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

/* the daemon is out of reach: keep the payload for it, then exit 0 */
static void spool(void) {
    if (strcmp(mode, "wake") == 0) _exit(0);
    /* never spool half a payload: stdin may still be arriving (slowly, or held open after
     * the object); read on until EOF, one whole object, or the deadline */
    while (!in_eof && !whole()) {
        int rc = read_more();
        if (rc == 2) break;
        if (rc == 0) in_eof = 1;
    }
    if (!blen) _exit(0);
    char dir[4200], tmp[4400], dst[4400];
    snprintf(dir, sizeof dir, "%s/spool", home);
    mkdir(dir, 0700);
    if ((size_t)snprintf(dir, sizeof dir, "%s/spool/%s", home, builder) >= sizeof dir) _exit(0);
    mkdir(dir, 0700);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, id);
    snprintf(dst, sizeof dst, "%s/%s.%s.json", dir, id, harness);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) _exit(0);
    if (write_all(fd, buf, blen) < 0 || close(fd) < 0 || rename(tmp, dst) < 0) unlink(tmp);
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

int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    if (argc < 3) return 0;
    /* HOOKD_HOME: argv[0] minus "/bin/<name>" */
    const char *slash = strrchr(argv[0], '/');
    size_t hl0 = slash ? (size_t)(slash - argv[0]) : 0;
    if (hl0 < 4 || hl0 >= sizeof home || strncmp(argv[0] + hl0 - 4, "/bin", 4) != 0) return 0;
    memcpy(home, argv[0], hl0 - 4);
    home[hl0 - 4] = 0;
    harness = argv[1];
    builder = argv[2];
    const char *deadline = argc > 3 ? argv[3] : "5000";
    if (argc > 4) mode = argv[4];
    if (!valid(harness, LOWER "-", LOWER "-")) return 0;
    if (!valid(builder, ALNUM, ALNUM "._-")) return 0;
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

    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0) spool();
    fcntl(s, F_SETFD, FD_CLOEXEC);
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);  /* every wait below is bounded */
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if ((size_t)snprintf(addr.sun_path, sizeof addr.sun_path, "%s/run/hookd.sock", home) > MAX_SOCKET_PATH) {
        char f[4200];
        snprintf(f, sizeof f, "%s/bin/socket-path", home);
        int fd = open(f, O_RDONLY);
        ssize_t n = fd < 0 ? -1 : read(fd, addr.sun_path, sizeof addr.sun_path - 1);
        if (fd >= 0) close(fd);
        if (n <= 0) spool();
        addr.sun_path[n] = 0;
        addr.sun_path[strcspn(addr.sun_path, "\n")] = 0;
    }
    while (connect(s, (struct sockaddr *)&addr, sizeof addr) < 0) {
        if (errno == EINTR) continue;
        if (errno == EINPROGRESS) {
            struct pollfd p = {s, POLLOUT, 0};
            int t = left_ms(), err = 0;
            socklen_t len = sizeof err;
            if (t < 0 || wait_fds(&p, 1, t) <= 0 || getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) spool();
            break;
        }
        if (errno == EAGAIN && left_ms() > 0) {  /* the daemon's backlog is full: retry shortly */
            wait_fds(NULL, 0, 1);
            continue;
        }
        spool();  /* no daemon (refused, no socket file) */
    }

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

    char head[16384];
    int hl = snprintf(head, sizeof head,
                      "POST /v1/hooks/%s/%s%s HTTP/1.1\r\nHost: hookd\r\nX-Hookd-Delivery: %s\r\n"
                      "X-Hookd-Deadline-Ms: %s\r\n%s%sContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                      harness, builder, path, id, deadline, pidh, cwdh);
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
    static char resp[REPLY_MAX + 1];
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
    resp[rl] = 0;
    char *sep = strstr(resp, "\r\n\r\n");
    if (!sep) spool();  /* no complete reply: keep the payload */
    if (strncmp(resp, "HTTP/1.1 200 ", 13) == 0) {
    } else if (strncmp(resp, "HTTP/1.1 4", 10) == 0 || strncmp(resp, "HTTP/1.1 5", 10) == 0) {
        return 0;  /* the daemon stored it and said no */
    } else {
        spool();
    }
    char *body = sep + 4;
    size_t blen_reply = rl - (size_t)(body - resp);
    /* the body must be complete (its length equals the Content-Length header) */
    long long clen = -1;
    for (char *h = resp; h < sep;) {
        char *eol = strstr(h, "\r\n");
        if (!eol) break;
        if (strncasecmp(h, "content-length:", 15) == 0) clen = atoll(h + 15);
        h = eol + 2;
    }
    if (clen < 0 || (size_t)clen != blen_reply) return 0;
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
