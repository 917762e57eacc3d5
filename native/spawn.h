/* The spawn half of Errand's native helper (spawn.c), registered by the module's init in pipes.c. */
#ifndef ERRAND_SPAWN_H
#define ERRAND_SPAWN_H

#include <node_api.h>

/* Adds setExitListener and spawnCommand to exports where they work (Linux with pidfds); 0, or -1 on failure. */
int errand_register_spawn(napi_env env, napi_value exports);

#endif
