esac
