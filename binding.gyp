{
  "targets": [
    {
      "target_name": "errand_native",
      "sources": ["native/pipes.c", "native/spawn.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
