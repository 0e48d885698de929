K a;;
