/*
 * Errand's one native helper: a pipe(2) for a command's stdout or stderr, and the open of such a pipe's
 * write side by the spawner sidecar (through /proc/<runtime pid>/fd/<n>). Node gives a child's stdio
 * socket pairs, and a program that opens /dev/stdout or /dev/stderr (`echo x > /dev/stderr`,
 * `tee /dev/stdout`) fails on a socket with ENXIO; on a pipe it works as in a terminal shell. Every
 * descriptor made here is close-on-exec: a spawn dups it onto the child's descriptor, and no other child
 * inherits it. Built by node-gyp at install (binding.gyp); without it Errand falls back to socket pairs.
 */
#ifdef __linux__
#define _GNU_SOURCE
#endif
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spawn.h"

static napi_value fail(napi_env env, int code, const char *syscall) {
  char message[160];
  snprintf(message, sizeof message, "%s failed: %s", syscall, strerror(code));
  const char *name = code == EMFILE ? "EMFILE" : code == ENFILE ? "ENFILE" : code == ENXIO ? "ENXIO" : code == ENOENT ? "ENOENT" : code == EACCES ? "EACCES" : "EPIPEFAILED";
  napi_throw_error(env, name, message);
  return NULL;
}

#ifndef __linux__
static int close_on_exec(int fd) {
  int flags = fcntl(fd, F_GETFD);
  return flags < 0 ? -1 : fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}
#endif

static int make_pipe(int fds[2]) {
#ifdef __linux__
  return pipe2(fds, O_CLOEXEC);
#else
  if (pipe(fds) != 0) return -1;
  if (close_on_exec(fds[0]) != 0 || close_on_exec(fds[1]) != 0) {
    int code = errno;
    close(fds[0]);
    close(fds[1]);
    errno = code;
    return -1;
  }
  return 0;
#endif
}

/* The values as an array, or NULL (nothing thrown) when N-API could not make it. */
static napi_value array_of(napi_env env, const napi_value *values, uint32_t count) {
  napi_value result;
  if (napi_create_array_with_length(env, count, &result) != napi_ok) return NULL;
  for (uint32_t index = 0; index < count; index += 1) {
    if (napi_set_element(env, result, index, values[index]) != napi_ok) return NULL;
  }
  return result;
}

/* The result could not be handed back: its descriptors are closed, so none stays open unowned. */
static napi_value give_up(napi_env env, const int *fds, int count, const char *what) {
  for (int index = 0; index < count; index += 1) close(fds[index]);
  napi_throw_error(env, NULL, what);
  return NULL;
}

/* createPipe(): [readFd, writeFd]; throws with code EMFILE or ENFILE when out of descriptors. */
static napi_value create_pipe(napi_env env, napi_callback_info info) {
  (void)info;
  int fds[2];
  if (make_pipe(fds) != 0) return fail(env, errno, "pipe2");
  napi_value values[2];
  napi_value result = NULL;
  if (napi_create_int32(env, fds[0], &values[0]) == napi_ok &&
      napi_create_int32(env, fds[1], &values[1]) == napi_ok) {
    result = array_of(env, values, 2);
  }
  return result != NULL ? result : give_up(env, fds, 2, "createPipe: could not return the descriptors");
}

/*
 * createReadEnds(): [stdoutRead, stdoutInode, stderrRead, stderrInode] for two new pipes whose write
 * ends are closed already (a spawner opens them again through /proc); inodes as decimal strings. One
 * call, so a launch through the sidecar pays one crossing into native code for its pipes.
 */
static napi_value create_read_ends(napi_env env, napi_callback_info info) {
  (void)info;
  int out[2], err[2];
  if (make_pipe(out) != 0) return fail(env, errno, "pipe2");
  if (make_pipe(err) != 0) {
    int code = errno;
    close(out[0]);
    close(out[1]);
    return fail(env, code, "pipe2");
  }
  close(out[1]);
  close(err[1]);
  struct stat out_stat, err_stat;
  if (fstat(out[0], &out_stat) != 0 || fstat(err[0], &err_stat) != 0) {
    int code = errno;
    close(out[0]);
    close(err[0]);
    return fail(env, code, "fstat");
  }
  char out_inode[24], err_inode[24];
  snprintf(out_inode, sizeof out_inode, "%llu", (unsigned long long)out_stat.st_ino);
  snprintf(err_inode, sizeof err_inode, "%llu", (unsigned long long)err_stat.st_ino);
  int reads[2] = {out[0], err[0]};
  napi_value values[4];
  napi_value result = NULL;
  if (napi_create_int32(env, out[0], &values[0]) == napi_ok &&
      napi_create_string_utf8(env, out_inode, NAPI_AUTO_LENGTH, &values[1]) == napi_ok &&
      napi_create_int32(env, err[0], &values[2]) == napi_ok &&
      napi_create_string_utf8(env, err_inode, NAPI_AUTO_LENGTH, &values[3]) == napi_ok) {
    result = array_of(env, values, 4);
  }
  return result != NULL ? result : give_up(env, reads, 2, "createReadEnds: could not return the descriptors");
}

/*
 * openForWriting(path): a descriptor writing to the FIFO or pipe at path (another process's pipe through
 * /proc/<pid>/fd/<n>), close-on-exec and blocking. Opened non-blocking, so a named FIFO that has no reader
 * fails with ENXIO instead of waiting for one (an anonymous pipe opened this way never waits); then made
 * blocking, as a command's stdout must be.
 */
static napi_value open_for_writing(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  char path[256];
  size_t length = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_string_utf8(env, argv[0], path, sizeof path, &length) != napi_ok ||
      length >= sizeof path - 1) {
    napi_throw_type_error(env, NULL, "openForWriting: path must be a string shorter than 255 bytes");
    return NULL;
  }
  int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return fail(env, errno, "open");
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int code = errno;
    close(fd);
    return fail(env, code, "fcntl");
  }
  napi_value result;
  if (napi_create_int32(env, fd, &result) != napi_ok) {
    close(fd);
    napi_throw_error(env, NULL, "openForWriting: could not return the descriptor");
    return NULL;
  }
  return result;
}

NAPI_MODULE_INIT() {
  napi_value create, read_ends, open_writer;
  if (napi_create_function(env, "createPipe", NAPI_AUTO_LENGTH, create_pipe, NULL, &create) != napi_ok ||
      napi_set_named_property(env, exports, "createPipe", create) != napi_ok ||
      napi_create_function(env, "createReadEnds", NAPI_AUTO_LENGTH, create_read_ends, NULL, &read_ends) !=
          napi_ok ||
      napi_set_named_property(env, exports, "createReadEnds", read_ends) != napi_ok ||
      napi_create_function(env, "openForWriting", NAPI_AUTO_LENGTH, open_for_writing, NULL, &open_writer) !=
          napi_ok ||
      napi_set_named_property(env, exports, "openForWriting", open_writer) != napi_ok ||
      errand_register_spawn(env, exports) != 0) {
    return NULL;
  }
  return exports;
}
