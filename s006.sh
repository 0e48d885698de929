K $(( $(nproc) / 2 ))
