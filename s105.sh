cat <<EOF
"
EOF
fi
