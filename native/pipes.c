/*
 * Errand's one native helper: a pipe(2) for a command's stdout or stderr. Node gives a child's stdio
 * socket pairs, and a program that opens /dev/stdout or /dev/stderr (`echo x > /dev/stderr`,
 * `tee /dev/stdout`) fails on a socket with ENXIO; on a pipe it works as in a terminal shell. Both ends
 * are close-on-exec: a spawn dups the write end onto the child's descriptor, and no other child inherits
 * it. Built by node-gyp at install (binding.gyp); without it Errand falls back to socket pairs.
 */
#ifdef __linux__
#define _GNU_SOURCE
#endif
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static napi_value fail(napi_env env, int code, const char *syscall) {
  char message[160];
  snprintf(message, sizeof message, "%s failed: %s", syscall, strerror(code));
  const char *name = code == EMFILE ? "EMFILE" : code == ENFILE ? "ENFILE" : "EPIPEFAILED";
  napi_throw_error(env, name, message);
  return NULL;
}

#ifndef __linux__
static int close_on_exec(int fd) {
  int flags = fcntl(fd, F_GETFD);
  return flags < 0 ? -1 : fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}
#endif

/* createPipe(): [readFd, writeFd]; throws with code EMFILE or ENFILE when out of descriptors. */
static napi_value create_pipe(napi_env env, napi_callback_info info) {
  (void)info;
  int fds[2];
#ifdef __linux__
  if (pipe2(fds, O_CLOEXEC) != 0) return fail(env, errno, "pipe2");
#else
  if (pipe(fds) != 0) return fail(env, errno, "pipe");
  if (close_on_exec(fds[0]) != 0 || close_on_exec(fds[1]) != 0) {
    int code = errno;
    close(fds[0]);
    close(fds[1]);
    return fail(env, code, "fcntl");
  }
#endif
  napi_value result, read_end, write_end;
  if (napi_create_array_with_length(env, 2, &result) != napi_ok ||
      napi_create_int32(env, fds[0], &read_end) != napi_ok ||
      napi_create_int32(env, fds[1], &write_end) != napi_ok ||
      napi_set_element(env, result, 0, read_end) != napi_ok ||
      napi_set_element(env, result, 1, write_end) != napi_ok) {
    close(fds[0]);
    close(fds[1]);
    napi_throw_error(env, NULL, "createPipe: could not return the descriptors");
    return NULL;
  }
  return result;
}

NAPI_MODULE_INIT() {
  napi_value function;
  if (napi_create_function(env, "createPipe", NAPI_AUTO_LENGTH, create_pipe, NULL, &function) != napi_ok ||
      napi_set_named_property(env, exports, "createPipe", function) != napi_ok) {
    return NULL;
  }
  return exports;
}
