case x in
a) b;;
