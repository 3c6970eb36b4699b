# Integration tests on an emulated 8-CPU machine (2 sockets x 2 cores x 2 threads, 2 NUMA nodes), early:
# what only a multi-socket SMT machine shows should fail in minutes, not at the end.
if [ -f "$shared/tools/vmtopo.sh" ]; then
  (cd /tmp && bash "$shared/tools/vmtopo.sh" --smp 8,sockets=2,cores=2,threads=2 --numa 2 --mem 2G \
    --timeout 1800 --cwd /tmp -- "$venv/bin/python" -m pytest -c "$repo/pyproject.toml" --rootdir "$repo" \
    -p no:cacheprovider -m vm "$repo/tests")
else
  echo "vmtopo.sh not found under $shared: cannot run the emulated-machine tests" >&2
  exit 1
fi
