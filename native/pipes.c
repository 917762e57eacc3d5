/*
 * Errand's pipes helper (its own loadable unit, errand_pipes.node): a pipe(2) for a command's stdout or
 * stderr. Node gives a child's stdio socket pairs, and a program that opens /dev/stdout or /dev/stderr
 * (`echo x > /dev/stderr`, `tee /dev/stdout`) fails on a socket with ENXIO; on a pipe it works as in a
 * terminal shell. Every descriptor made here is close-on-exec: a spawn dups it onto the child's
 * descriptor, and no other child inherits it. Built by node-gyp at install (binding.gyp); without it
 * Errand falls back to socket pairs.
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

NAPI_MODULE_INIT() {
  napi_value create;
  if (napi_create_function(env, "createPipe", NAPI_AUTO_LENGTH, create_pipe, NULL, &create) != napi_ok ||
      napi_set_named_property(env, exports, "createPipe", create) != napi_ok) {
    return NULL;
  }
  return exports;
}
