package link_test

import (
	"fmt"

	"github.com/skiffvpn/skiff/core/link"
)

func ExampleParse() {
	n, err := link.Parse("hy2://letmein@example.com:443,5000-6000/?obfs=salamander&obfs-password=gawrgura&sni=real.example.com#Tokyo%20%F0%9F%87%AF%F0%9F%87%B5")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(n.Name, n.Protocol, n.Address(), n.Hysteria2.Ports, n.TLS.SNI)

	_, err = link.Parse("vless://not-a-uuid@example.com:443")
	fmt.Println(err)
	// Output:
	// Tokyo 🇯🇵 hysteria2 example.com:443 443,5000-6000 real.example.com
	// link: vless: uuid: not a UUID
}

func ExampleFormat() {
	n, _ := link.Parse("vless://B831381D-6324-4D53-AD4F-8CDA48B30811@[2001:db8::1]:443?type=ws&security=tls&path=%2Fws%3Fed%3D2560#ws")
	s, _ := link.Format(n)
	fmt.Println(s)
	// Output:
	// vless://b831381d-6324-4d53-ad4f-8cda48b30811@[2001:db8::1]:443?encryption=none&security=tls&type=ws&path=%2Fws%3Fed%3D2560#ws
}
