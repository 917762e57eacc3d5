/*
 * A command's spawn without fork(2): posix_spawn(3), which glibc runs as clone(CLONE_VM | CLONE_VFORK),
 * so the spawner's page tables are never copied (Node's child_process forks, and a fork's cost grows with
 * the spawner's memory: about 1 ms from a 45 MiB Node process here, most of a quick command's start).
 * The child gets a session of its own, every signal at its default and none blocked, stdin on /dev/null
 * and the two descriptors it is given as stdout and stderr — what `child_process.spawn` with
 * `detached: true` gives it; every other descriptor of this process is close-on-exec, as Node's are.
 *
 * Descriptors of this process that are not close-on-exec (a library's, opened without O_CLOEXEC) are
 * closed in the child (posix_spawn_file_actions_addclosefrom_np, glibc 2.34): a command holds 0, 1 and 2.
 *
 * Nobody else reaps such a child (libuv waits only for the pids it spawned), so its exit is heard here:
 * a pidfd per child in one epoll set, watched by a reaper thread that reaps with waitid(P_PIDFD) and hands
 * the status to JavaScript through a thread-safe function. The exit names the spawn by the id the caller
 * gave it, never by pid: a pid reused between the reap and the call on the event loop cannot take another
 * command's exit. The function holds the event loop open while a child is watched, as a ChildProcess
 * handle does, and lets it go when none is. A listener that throws raises an uncaught exception, as a
 * throwing ChildProcess 'exit' listener does.
 *
 *     setExitListener((id, code, signo) => ...)   once per JavaScript environment
 *     spawnCommand(file, argv, envp, cwd, stdoutFd, stderrFd, id) → pid, or -errno when the spawn failed;
 *       stdoutFd and stderrFd are closed here before it returns, whatever it returns
 *
 * Its own loadable unit (errand_spawn.node). Linux 5.4 or later (pidfd_open and waitid(P_PIDFD), checked
 * when it loads); elsewhere neither function is exported and Errand spawns with Node.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <node_api.h>

#include <unistd.h> /* defines __GLIBC__ where it is glibc */

#if defined(__linux__) && (!defined(__GLIBC__) || __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
#define ERRAND_NATIVE_SPAWN 1
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#define ERRAND_CLOSEFROM 1
#endif

#ifdef ERRAND_NATIVE_SPAWN
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* An argument or environment string longer than this is refused (Linux's own limit per string). */
#define MAX_STRING_BYTES (128 * 1024)
/* The epoll key of the descriptor that tells the reaper thread to stop. */
#define STOP_KEY UINT64_MAX

typedef struct {
  int epoll_fd;
  int stop_fd;
  pthread_t thread;
  bool thread_started;
  napi_threadsafe_function exits;
  /* Children spawned and not yet reported; touched on the JavaScript thread only. */
  uint32_t watched;
} Reaper;

typedef struct {
  uint32_t id;
  int32_t code;
  int32_t signo;
} ExitEvent;

static int pidfd_open_for(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

static void *reap(void *data) {
  Reaper *reaper = data;
  struct epoll_event events[32];
  for (;;) {
    int count = epoll_wait(reaper->epoll_fd, events, 32, -1);
    if (count < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    for (int index = 0; index < count; index += 1) {
      uint64_t key = events[index].data.u64;
      if (key == STOP_KEY) return NULL;
      int pidfd = (int)(key & 0xffffffffu);
      ExitEvent *event = malloc(sizeof *event);
      siginfo_t info;
      memset(&info, 0, sizeof info);
      int result;
      do {
        result = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED);
      } while (result != 0 && errno == EINTR);
      epoll_ctl(reaper->epoll_fd, EPOLL_CTL_DEL, pidfd, NULL);
      close(pidfd);
      if (event == NULL) continue;
      event->id = (uint32_t)(key >> 32);
      /* Unknown (-1, 0) when it could not be reaped: somebody else waited for it. */
      event->code = -1;
      event->signo = 0;
      if (result == 0 && info.si_code == CLD_EXITED) event->code = info.si_status;
      if (result == 0 && (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)) event->signo = info.si_status;
      if (napi_call_threadsafe_function(reaper->exits, event, napi_tsfn_nonblocking) != napi_ok) free(event);
    }
  }
}

static void deliver(napi_env env, napi_value listener, void *context, void *data) {
  Reaper *reaper = context;
  ExitEvent *event = data;
  /* Torn down (the environment is going): the reaper may be gone already, only the event is freed. */
  if (env == NULL) {
    free(event);
    return;
  }
  if (reaper->watched > 0) {
    reaper->watched -= 1;
    if (reaper->watched == 0) napi_unref_threadsafe_function(env, reaper->exits);
  }
  if (listener != NULL) {
    napi_value args[3], global, ignored;
    if (napi_create_uint32(env, event->id, &args[0]) == napi_ok &&
        napi_create_int32(env, event->code, &args[1]) == napi_ok &&
        napi_create_int32(env, event->signo, &args[2]) == napi_ok && napi_get_global(env, &global) == napi_ok &&
        napi_call_function(env, global, listener, 3, args, &ignored) == napi_pending_exception) {
      /* Thrown by a listener: an uncaught exception, as from a ChildProcess's 'exit' listener. */
      napi_value thrown;
      if (napi_get_and_clear_last_exception(env, &thrown) == napi_ok) napi_fatal_exception(env, thrown);
    }
  }
  free(event);
}

/*
 * Stops the reaper thread and frees it. As an environment cleanup hook it is registered after the
 * thread-safe function, so it runs before that function's own teardown (hooks run last in, first out):
 * the thread never calls a function already torn down.
 */
static void stop_reaper(void *data) {
  Reaper *reaper = data;
  if (reaper->thread_started) {
    uint64_t one = 1;
    if (write(reaper->stop_fd, &one, sizeof one) == sizeof one) pthread_join(reaper->thread, NULL);
  }
  if (reaper->epoll_fd >= 0) close(reaper->epoll_fd);
  if (reaper->stop_fd >= 0) close(reaper->stop_fd);
  free(reaper);
}

static napi_value fail_errno(napi_env env, const char *what) {
  char message[160];
  snprintf(message, sizeof message, "%s failed: %s", what, strerror(errno));
  napi_throw_error(env, NULL, message);
  return NULL;
}

/* setExitListener(listener): starts this environment's reaper; called once, before any spawnCommand. */
static napi_value set_exit_listener(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_valuetype type;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_typeof(env, argv[0], &type) != napi_ok || type != napi_function) {
    napi_throw_type_error(env, NULL, "setExitListener: listener must be a function");
    return NULL;
  }
  Reaper *existing = NULL;
  if (napi_get_instance_data(env, (void **)&existing) == napi_ok && existing != NULL) {
    napi_throw_error(env, NULL, "setExitListener: a listener is set already");
    return NULL;
  }
  Reaper *reaper = calloc(1, sizeof *reaper);
  if (reaper == NULL) return fail_errno(env, "calloc");
  reaper->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  reaper->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (reaper->epoll_fd < 0 || reaper->stop_fd < 0) {
    int code = errno;
    stop_reaper(reaper);
    errno = code;
    return fail_errno(env, "epoll_create1/eventfd");
  }
  struct epoll_event stop = {.events = EPOLLIN, .data.u64 = STOP_KEY};
  if (epoll_ctl(reaper->epoll_fd, EPOLL_CTL_ADD, reaper->stop_fd, &stop) != 0) {
    int code = errno;
    stop_reaper(reaper);
    errno = code;
    return fail_errno(env, "epoll_ctl");
  }
  napi_value name;
  if (napi_create_string_utf8(env, "errand:exits", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, NULL, NULL, reaper, deliver,
                                      &reaper->exits) != napi_ok) {
    stop_reaper(reaper);
    napi_throw_error(env, NULL, "setExitListener: could not make the thread-safe function");
    return NULL;
  }
  napi_unref_threadsafe_function(env, reaper->exits);
  /* The reaper takes no signals: they stay the JavaScript thread's, where libuv expects them. */
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  int started = pthread_create(&reaper->thread, NULL, reap, reaper);
  pthread_sigmask(SIG_SETMASK, &previous, NULL);
  if (started != 0) {
    napi_release_threadsafe_function(reaper->exits, napi_tsfn_abort);
    stop_reaper(reaper);
    errno = started;
    return fail_errno(env, "pthread_create");
  }
  reaper->thread_started = true;
  if (napi_add_env_cleanup_hook(env, stop_reaper, reaper) != napi_ok ||
      napi_set_instance_data(env, reaper, NULL, NULL) != napi_ok) {
    napi_throw_error(env, NULL, "setExitListener: could not keep the reaper");
    return NULL;
  }
  return NULL;
}

/* A JavaScript string as a new C string (free it), or NULL with an error thrown. */
static char *string_of(napi_env env, napi_value value, const char *what) {
  size_t length = 0;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &length) != napi_ok || length > MAX_STRING_BYTES) {
    napi_throw_type_error(env, NULL, what);
    return NULL;
  }
  char *text = malloc(length + 1);
  if (text == NULL || napi_get_value_string_utf8(env, value, text, length + 1, &length) != napi_ok ||
      strlen(text) != length) {
    /* A string with a NUL inside cannot be an argument or a variable. */
    free(text);
    napi_throw_type_error(env, NULL, what);
    return NULL;
  }
  return text;
}

static void free_strings(char **strings) {
  if (strings == NULL) return;
  for (char **cursor = strings; *cursor != NULL; cursor += 1) free(*cursor);
  free(strings);
}

/* A JavaScript array of strings as a NULL-terminated vector (free_strings it), or NULL with an error thrown. */
static char **strings_of(napi_env env, napi_value array, const char *what) {
  bool is_array = false;
  uint32_t count = 0;
  if (napi_is_array(env, array, &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, array, &count) != napi_ok) {
    napi_throw_type_error(env, NULL, what);
    return NULL;
  }
  char **strings = calloc((size_t)count + 1, sizeof *strings);
  if (strings == NULL) {
    napi_throw_error(env, NULL, "spawnCommand: out of memory");
    return NULL;
  }
  for (uint32_t index = 0; index < count; index += 1) {
    napi_value element;
    if (napi_get_element(env, array, index, &element) != napi_ok ||
        (strings[index] = string_of(env, element, what)) == NULL) {
      bool pending = false;
      napi_is_exception_pending(env, &pending);
      if (!pending) napi_throw_type_error(env, NULL, what);
      free_strings(strings);
      return NULL;
    }
  }
  return strings;
}

/*
 * The child has run, and no exit of it can be reported: it is stopped and reaped before the failure is
 * returned, so no command runs unwatched.
 */
static int undo_spawn(pid_t pid, int code) {
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  return -code;
}

/*
 * Closes in the child every descriptor above 2 that would survive the exec. With glibc 2.34 or later one
 * action does it; elsewhere the descriptors this process holds without close-on-exec now are listed from
 * /proc/self/fd and closed one by one (one closed by another thread meanwhile fails that spawn with EBADF,
 * which Node's spawn error reports).
 */
static int add_close_inherited(posix_spawn_file_actions_t *actions) {
#ifdef ERRAND_CLOSEFROM
  return posix_spawn_file_actions_addclosefrom_np(actions, 3);
#else
  DIR *directory = opendir("/proc/self/fd");
  if (directory == NULL) return 0;
  int listing = dirfd(directory);
  int code = 0;
  for (struct dirent *entry = readdir(directory); entry != NULL && code == 0; entry = readdir(directory)) {
    char *end = NULL;
    long fd = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd < 3 || fd == listing) continue;
    int flags = fcntl((int)fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) code = posix_spawn_file_actions_addclose(actions, (int)fd);
  }
  closedir(directory);
  return code;
#endif
}

static int spawn_watched(Reaper *reaper, const char *file, char **argv, char **envp, const char *cwd, int out,
                         int err, uint32_t id, pid_t *spawned) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  int code = posix_spawn_file_actions_init(&actions);
  if (code != 0) return -code;
  code = posix_spawnattr_init(&attributes);
  if (code != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return -code;
  }
  sigset_t defaults, none;
  /*
   * Every signal back to its default, glibc's internal two (32 and 33) included: sigfillset leaves them
   * out, and the spawn would then leave them ignored across the exec, which a ChildProcess's are not.
   * Nothing signals a child between its clone and its exec with those, so the default is safe there.
   */
  memset(&defaults, 0xff, sizeof defaults);
  sigemptyset(&none);
  if ((cwd[0] == '\0' || (code = posix_spawn_file_actions_addchdir_np(&actions, cwd)) == 0) &&
      (code = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) == 0 &&
      (code = posix_spawn_file_actions_adddup2(&actions, out, 1)) == 0 &&
      (code = posix_spawn_file_actions_adddup2(&actions, err, 2)) == 0 &&
      /* After the dups: whatever this process holds without close-on-exec stays out of the command. */
      (code = add_close_inherited(&actions)) == 0 &&
      (code = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF |
                                                         POSIX_SPAWN_SETSIGMASK)) == 0 &&
      (code = posix_spawnattr_setsigdefault(&attributes, &defaults)) == 0 &&
      (code = posix_spawnattr_setsigmask(&attributes, &none)) == 0) {
    code = posix_spawn(spawned, file, &actions, &attributes, argv, envp);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (code != 0) return -code;
  pid_t pid = *spawned;
  int pidfd = pidfd_open_for(pid);
  if (pidfd < 0) return undo_spawn(pid, errno);
  struct epoll_event watch = {.events = EPOLLIN, .data.u64 = ((uint64_t)id << 32) | (uint32_t)pidfd};
  if (epoll_ctl(reaper->epoll_fd, EPOLL_CTL_ADD, pidfd, &watch) != 0) {
    code = errno;
    close(pidfd);
    return undo_spawn(pid, code);
  }
  return 0;
}

/*
 * spawnCommand(file, argv, envp, cwd, stdoutFd, stderrFd, id): the child's pid, or -errno when it could not
 * run; the two descriptors are closed before it returns (or throws for a bad argument). Its exit is
 * reported under `id`.
 */
static napi_value spawn_command(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value args[7];
  Reaper *reaper = NULL;
  uint32_t id = 0;
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc < 7 ||
      napi_get_value_uint32(env, args[6], &id) != napi_ok) {
    napi_throw_type_error(env, NULL, "spawnCommand: seven arguments expected, the last a spawn id");
    return NULL;
  }
  if (napi_get_instance_data(env, (void **)&reaper) != napi_ok || reaper == NULL) {
    napi_throw_error(env, NULL, "spawnCommand: setExitListener was not called");
    return NULL;
  }
  int32_t out = -1, err = -1;
  if (napi_get_value_int32(env, args[4], &out) != napi_ok || napi_get_value_int32(env, args[5], &err) != napi_ok ||
      out < 0 || err < 0) {
    napi_throw_type_error(env, NULL, "spawnCommand: stdout and stderr must be descriptors");
    return NULL;
  }
  char *file = NULL, *cwd = NULL;
  char **argv = NULL, **envp = NULL;
  napi_value result = NULL;
  if ((file = string_of(env, args[0], "spawnCommand: file must be a string without NUL")) != NULL &&
      (argv = strings_of(env, args[1], "spawnCommand: argv must be strings without NUL")) != NULL &&
      (envp = strings_of(env, args[2], "spawnCommand: envp must be strings without NUL")) != NULL &&
      (cwd = string_of(env, args[3], "spawnCommand: cwd must be a string without NUL")) != NULL) {
    pid_t pid = 0;
    int code = spawn_watched(reaper, file, argv, envp, cwd, out, err, id, &pid);
    if (code == 0 && ++reaper->watched == 1) napi_ref_threadsafe_function(env, reaper->exits);
    napi_create_int32(env, code == 0 ? pid : code, &result);
  }
  /*
   * The two descriptors were given to the child: closed here at once, spawned or not, so no copy of a
   * pipe's write side outlives the call in this process (the command's exit alone ends its pipes).
   */
  close(out);
  if (err != out) close(err);
  free(file);
  free(cwd);
  free_strings(argv);
  free_strings(envp);
  return result;
}

/*
 * Whether pidfds work on this kernel as the reaper uses them: pidfd_open (5.3) and waitid(P_PIDFD) (5.4).
 * A pidfd of this very process is no child of ours: 5.4 and later answer ECHILD, 5.3 EINVAL. Without
 * both no exit could be heard, and Node spawns instead.
 */
static bool pidfds_work(void) {
  int fd = pidfd_open_for(getpid());
  if (fd < 0) return false;
  siginfo_t info;
  memset(&info, 0, sizeof info);
  int result = waitid((idtype_t)P_PIDFD, (id_t)fd, &info, WEXITED | WNOHANG);
  int code = errno;
  close(fd);
  return result != 0 && code == ECHILD;
}

NAPI_MODULE_INIT() {
  if (!pidfds_work()) return exports;
  napi_value listener, spawner;
  if (napi_create_function(env, "setExitListener", NAPI_AUTO_LENGTH, set_exit_listener, NULL, &listener) !=
          napi_ok ||
      napi_set_named_property(env, exports, "setExitListener", listener) != napi_ok ||
      napi_create_function(env, "spawnCommand", NAPI_AUTO_LENGTH, spawn_command, NULL, &spawner) != napi_ok ||
      napi_set_named_property(env, exports, "spawnCommand", spawner) != napi_ok) {
    return NULL;
  }
  return exports;
}

#else

NAPI_MODULE_INIT() {
  (void)env;
  return exports;
}

#endif
