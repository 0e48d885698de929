K if then fi { } !
