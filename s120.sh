coproc a
