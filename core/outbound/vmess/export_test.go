package vmess

import "golang.org/x/crypto/chacha20poly1305"

var chacha20poly1305New = chacha20poly1305.New
