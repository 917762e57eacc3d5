{
  "targets": [
    {
      "target_name": "errand_pipes",
      "sources": ["native/pipes.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    },
    {
      "target_name": "errand_spawn",
      "sources": ["native/spawn.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
