cat <<'E F'
x
E F
