f\
i
