{
  "targets": [
    {
      "target_name": "errand_pipes",
      "sources": ["native/pipes.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
