a & b &
