cat <<-E
	x
	E
fi
