//go:build !linux

package pluginhost

import "net"

// peerPID is Linux's (SO_PEERCRED): elsewhere plugins run unconfined,
// and the host connects to the socket the handshake names.
func peerPID(net.Conn) (int, error) { return 0, errNoPeerCred }
