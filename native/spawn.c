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
 * Nobody else reaps such a child (libuv waits only for the pids it spawned), so its exit is heard here,
 * without a descriptor per child: one reaper thread per process blocks in waitid(P_ALL, WEXITED |
 * WNOWAIT), which wakes at any child's exit and leaves it a zombie, so its pid cannot be reused yet. The
 * reaper looks the pid up in the table of children spawned here (filled under the lock the spawn holds
 * from posix_spawn to the entry, so a child of ours is always in it before it can be looked up), reaps
 * exactly that pid, removes the entry, and hands the status to the JavaScript environment that spawned it
 * through a thread-safe function, under the id that environment gave the spawn: never matched by a pid
 * that could have been reused. A zombie that is not ours (a child libuv spawned, which libuv reaps on its
 * next turn) hides the ones behind it from waitid(P_ALL): while it is there the reaper asks each child of
 * ours by pid (waitid(P_PID, WNOHANG)), then looks again after a pause that doubles from 1 to 64 ms, so
 * an exit is never missed, only told later while another's zombie waits for its owner (for good, where a
 * zombie has none: a process running as PID 1 or a subreaper inherits orphans nobody reaps).
 *
 * The function holds the event loop open while a child of its environment is watched, as a ChildProcess
 * handle does, and lets it go when none is. A listener that throws raises an uncaught exception, as a
 * throwing ChildProcess 'exit' listener does. An environment that goes away (a worker thread) leaves its
 * children to the reaper, which reaps them and tells nobody.
 *
 *     setExitListener((id, code, signo) => ...)   once per JavaScript environment
 *     spawnCommand(file, argv, envp, cwd, stdoutFd, stderrFd, id) → pid, or -errno when the spawn failed;
 *       stdoutFd and stderrFd are closed here before it returns, whatever it returns
 *
 * Its own loadable unit (errand_spawn.node). Linux with glibc 2.29 or later (posix_spawn's chdir), or
 * another libc; elsewhere neither function is exported and Errand spawns with Node.
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
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* An argument or environment string longer than this is refused (Linux's own limit per string). */
#define MAX_STRING_BYTES (128 * 1024)
/* The longest pause before the reaper looks again past a zombie that is not ours. */
#define MAX_FOREIGN_PAUSE_MS 64

/* One JavaScript environment's listener (the main thread's, or a worker's). */
typedef struct {
  napi_threadsafe_function exits;
  /* Children spawned and not yet reported; touched on the environment's JavaScript thread only. */
  uint32_t watched;
  /* The rest under `table_lock`: whether the environment still listens, whether its function is gone. */
  bool alive;
  bool finalized;
  /* Its entries in the table. */
  uint32_t children;
} Listener;

/* A child spawned here and not reaped yet. pid 0 marks a free slot. */
typedef struct {
  pid_t pid;
  uint32_t id;
  Listener *listener;
} Child;

typedef struct {
  uint32_t id;
  int32_t code;
  int32_t signo;
} ExitEvent;

/*
 * The children of every environment of this process, by pid (open addressing, linear probing). One lock
 * guards it, the spawn (from posix_spawn to the entry) and the reaper's look-up and reap.
 */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t table_filled = PTHREAD_COND_INITIALIZER;
static Child *table;
static size_t table_capacity;
static size_t table_count;
static bool reaper_started;
static pthread_t reaper_thread;

static size_t slot_of(pid_t pid) { return ((uint32_t)pid * 2654435761u) & (table_capacity - 1); }

static Child *find_child(pid_t pid) {
  if (table_capacity == 0) return NULL;
  for (size_t index = slot_of(pid);; index = (index + 1) & (table_capacity - 1)) {
    if (table[index].pid == pid) return &table[index];
    if (table[index].pid == 0) return NULL;
  }
}

static void place_child(Child child) {
  size_t index = slot_of(child.pid);
  while (table[index].pid != 0) index = (index + 1) & (table_capacity - 1);
  table[index] = child;
  table_count += 1;
}

/* Room for one more entry, growing the table at half full; false when memory ran out. */
static bool make_room(void) {
  if ((table_count + 1) * 2 <= table_capacity) return true;
  size_t capacity = table_capacity == 0 ? 64 : table_capacity * 2;
  Child *grown = calloc(capacity, sizeof *grown);
  if (grown == NULL) return false;
  Child *old = table;
  size_t old_capacity = table_capacity;
  table = grown;
  table_capacity = capacity;
  table_count = 0;
  for (size_t index = 0; index < old_capacity; index += 1) {
    if (old[index].pid != 0) place_child(old[index]);
  }
  free(old);
  return true;
}

/* Removes an entry, moving back the ones after it that probed past it. */
static void remove_child(Child *entry) {
  size_t hole = (size_t)(entry - table);
  table[hole].pid = 0;
  table_count -= 1;
  for (size_t index = (hole + 1) & (table_capacity - 1); table[index].pid != 0;
       index = (index + 1) & (table_capacity - 1)) {
    size_t home = slot_of(table[index].pid);
    /* Moves back when its home is not within (hole, index], cyclically. */
    bool stays = hole <= index ? (home > hole && home <= index) : (home > hole || home <= index);
    if (stays) continue;
    table[hole] = table[index];
    table[index].pid = 0;
    hole = index;
  }
}

static void free_listener_if_done(Listener *listener) {
  if (!listener->alive && listener->finalized && listener->children == 0) free(listener);
}

/* Under the lock: hands a reaped child's status to its environment, or drops it when that is gone. */
static void report(Listener *listener, uint32_t id, const siginfo_t *info, bool reaped) {
  listener->children -= 1;
  if (listener->alive) {
    ExitEvent *event = malloc(sizeof *event);
    if (event != NULL) {
      event->id = id;
      /* Unknown (-1, 0) when it could not be reaped: somebody else waited for it. */
      event->code = -1;
      event->signo = 0;
      if (reaped && info->si_code == CLD_EXITED) event->code = info->si_status;
      if (reaped && (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)) event->signo = info->si_status;
      if (napi_call_threadsafe_function(listener->exits, event, napi_tsfn_nonblocking) != napi_ok) free(event);
    }
  }
  free_listener_if_done(listener);
}

/*
 * Under the lock, once waitid said this process has no child at all while entries remain: somebody else
 * reaped them. Each is reported as an exit of unknown status, so no spawn waits forever.
 */
static void report_all_lost(void) {
  for (size_t index = 0; index < table_capacity && table_count > 0;) {
    if (table[index].pid == 0) {
      index += 1;
      continue;
    }
    Child child = table[index];
    remove_child(&table[index]);
    report(child.listener, child.id, NULL, false);
    /* The slot may hold an entry moved back into it: look at it again. */
  }
}

/* Under the lock: reaps the zombie `entry` names (its pid is still its own) and reports it. */
static void reap_entry(Child *entry) {
  Child child = *entry;
  siginfo_t reaped;
  memset(&reaped, 0, sizeof reaped);
  int result;
  do {
    result = waitid(P_PID, (id_t)child.pid, &reaped, WEXITED);
  } while (result != 0 && errno == EINTR);
  remove_child(entry);
  report(child.listener, child.id, &reaped, result == 0);
}

/*
 * Under the lock, while a zombie that is not ours hides the rest from waitid(P_ALL): asks every child of
 * ours by its pid whether it ended, and reaps and reports those that did.
 */
static void sweep_table(void) {
  for (size_t index = 0; index < table_capacity;) {
    pid_t pid = table[index].pid;
    if (pid == 0) {
      index += 1;
      continue;
    }
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT | WNOHANG) == 0 && info.si_pid == pid) {
      reap_entry(&table[index]);
      /* The slot may hold an entry moved back into it: look at it again. */
      continue;
    }
    index += 1;
  }
}

static void pause_ms(unsigned milliseconds) {
  struct timespec pause = {.tv_sec = 0, .tv_nsec = (long)milliseconds * 1000000L};
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
}

static void *reap(void *unused) {
  (void)unused;
  /* The zombie not of ours seen last, and how long the reaper paused the last time it was still there. */
  pid_t foreign = 0;
  unsigned foreign_pause = 0;
  for (;;) {
    pthread_mutex_lock(&table_lock);
    while (table_count == 0) pthread_cond_wait(&table_filled, &table_lock);
    pthread_mutex_unlock(&table_lock);
    siginfo_t info;
    memset(&info, 0, sizeof info);
    /* Wakes at the exit of any child of this process and leaves it a zombie: its pid stays its own. */
    int result = waitid(P_ALL, 0, &info, WEXITED | WNOWAIT);
    int code = errno;
    if (result != 0 && code == EINTR) continue;
    pthread_mutex_lock(&table_lock);
    if (result != 0) {
      /*
       * No child at all (ECHILD). Asked again under the lock, where no spawn can add one: if still none,
       * the entries left were reaped by somebody else.
       */
      memset(&info, 0, sizeof info);
      if (waitid(P_ALL, 0, &info, WEXITED | WNOWAIT | WNOHANG) != 0 && errno == ECHILD) report_all_lost();
      pthread_mutex_unlock(&table_lock);
      continue;
    }
    Child *entry = find_child(info.si_pid);
    if (entry != NULL) {
      foreign = 0;
      reap_entry(entry);
      pthread_mutex_unlock(&table_lock);
      continue;
    }
    /*
     * Not ours: a child libuv spawned (reaped on its loop's next turn), or one whose spawn failed (its
     * spawner reaps it). Looked at again at once the first time; while it stays, every child of ours is
     * asked by pid, and the reaper pauses 1, 2, 4 ... 64 ms before it looks again.
     */
    if (info.si_pid != foreign) {
      foreign = info.si_pid;
      foreign_pause = 0;
      pthread_mutex_unlock(&table_lock);
      sched_yield();
      continue;
    }
    sweep_table();
    pthread_mutex_unlock(&table_lock);
    foreign_pause = foreign_pause == 0 ? 1 : foreign_pause * 2;
    if (foreign_pause > MAX_FOREIGN_PAUSE_MS) foreign_pause = MAX_FOREIGN_PAUSE_MS;
    pause_ms(foreign_pause);
  }
  return NULL;
}

static void deliver(napi_env env, napi_value listener, void *context, void *data) {
  Listener *own = context;
  ExitEvent *event = data;
  /* Torn down (the environment is going): only the event is freed. */
  if (env == NULL) {
    free(event);
    return;
  }
  if (own->watched > 0) {
    own->watched -= 1;
    if (own->watched == 0) napi_unref_threadsafe_function(env, own->exits);
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
 * The environment is going. Registered after its thread-safe function, so it runs before that function's
 * own teardown (hooks run last in, first out): the reaper never calls a function already torn down.
 */
static void stop_listening(void *data) {
  Listener *listener = data;
  pthread_mutex_lock(&table_lock);
  listener->alive = false;
  free_listener_if_done(listener);
  pthread_mutex_unlock(&table_lock);
}

static void exits_finalized(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  Listener *listener = data;
  pthread_mutex_lock(&table_lock);
  listener->finalized = true;
  free_listener_if_done(listener);
  pthread_mutex_unlock(&table_lock);
}

static napi_value fail_errno(napi_env env, const char *what, int code) {
  char message[160];
  snprintf(message, sizeof message, "%s failed: %s", what, strerror(code));
  napi_throw_error(env, NULL, message);
  return NULL;
}

/* Under the lock: the process's reaper thread, started once, taking no signals (they stay libuv's). */
static int start_reaper(void) {
  if (reaper_started) return 0;
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attributes, 256 * 1024);
  int started = pthread_create(&reaper_thread, &attributes, reap, NULL);
  pthread_attr_destroy(&attributes);
  pthread_sigmask(SIG_SETMASK, &previous, NULL);
  if (started == 0) reaper_started = true;
  return started;
}

/* setExitListener(listener): this environment's listener; called once, before any spawnCommand. */
static napi_value set_exit_listener(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_valuetype type;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_typeof(env, argv[0], &type) != napi_ok || type != napi_function) {
    napi_throw_type_error(env, NULL, "setExitListener: listener must be a function");
    return NULL;
  }
  Listener *existing = NULL;
  if (napi_get_instance_data(env, (void **)&existing) == napi_ok && existing != NULL) {
    napi_throw_error(env, NULL, "setExitListener: a listener is set already");
    return NULL;
  }
  pthread_mutex_lock(&table_lock);
  int started = start_reaper();
  pthread_mutex_unlock(&table_lock);
  if (started != 0) return fail_errno(env, "setExitListener: starting the reaper", started);
  Listener *listener = calloc(1, sizeof *listener);
  if (listener == NULL) return fail_errno(env, "calloc", ENOMEM);
  listener->alive = true;
  napi_value name;
  if (napi_create_string_utf8(env, "errand:exits", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, listener, exits_finalized, listener, deliver,
                                      &listener->exits) != napi_ok) {
    free(listener);
    napi_throw_error(env, NULL, "setExitListener: could not make the thread-safe function");
    return NULL;
  }
  napi_unref_threadsafe_function(env, listener->exits);
  if (napi_add_env_cleanup_hook(env, stop_listening, listener) != napi_ok ||
      napi_set_instance_data(env, listener, NULL, NULL) != napi_ok) {
    napi_throw_error(env, NULL, "setExitListener: could not keep the listener");
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

/* Under the lock: posix_spawn with the child's attributes. The pid, or -errno when it could not run. */
static pid_t spawn_child(const char *file, char **argv, char **envp, const char *cwd, int out, int err) {
  pid_t spawned = 0;
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
    code = posix_spawn(&spawned, file, &actions, &attributes, argv, envp);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  return code != 0 ? -code : spawned;
}

/*
 * spawnCommand(file, argv, envp, cwd, stdoutFd, stderrFd, id): the child's pid, or -errno when it could not
 * run; the two descriptors are closed before it returns (or throws for a bad argument). Its exit is
 * reported under `id`.
 */
static napi_value spawn_command(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value args[7];
  Listener *listener = NULL;
  uint32_t id = 0;
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc < 7 ||
      napi_get_value_uint32(env, args[6], &id) != napi_ok) {
    napi_throw_type_error(env, NULL, "spawnCommand: seven arguments expected, the last a spawn id");
    return NULL;
  }
  if (napi_get_instance_data(env, (void **)&listener) != napi_ok || listener == NULL) {
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
    pthread_mutex_lock(&table_lock);
    /* The entry is made before the lock is let go: the reaper never meets a child of ours it does not know. */
    pid_t pid = make_room() ? spawn_child(file, argv, envp, cwd, out, err) : -ENOMEM;
    if (pid > 0) {
      place_child((Child){.pid = pid, .id = id, .listener = listener});
      listener->children += 1;
      if (table_count == 1) pthread_cond_signal(&table_filled);
    }
    pthread_mutex_unlock(&table_lock);
    if (pid > 0 && ++listener->watched == 1) napi_ref_threadsafe_function(env, listener->exits);
    napi_create_int32(env, pid, &result);
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

NAPI_MODULE_INIT() {
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
