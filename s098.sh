f() { a; }
function g { a; }
function h () ( a )
