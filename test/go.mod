module github.com/skiffvpn/skiff/test

go 1.26.3

replace github.com/skiffvpn/skiff => ../
