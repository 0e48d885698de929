cat <<EOF
"
