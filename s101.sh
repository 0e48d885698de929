a=(b
c # d
)
declare e=(f)
