case x in if) ;; esac
