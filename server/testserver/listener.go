package testserver

import (
	"net"
	"sync"
)

// closingListener remembers the connections it accepted until they close, so that Stop can
// close them all: a graceful shutdown leaves every HTTP/2 connection a second to go away after
// the server says goodbye, which a test server stopped after every test should not spend.
type closingListener struct {
	net.Listener
	mu      sync.Mutex
	conns   map[*trackedConn]struct{}
	closing bool
}

func newClosingListener(ln net.Listener) *closingListener {
	return &closingListener{Listener: ln, conns: map[*trackedConn]struct{}{}}
}

// Accept hands on a connection, closed at once once closeConns has run.
func (l *closingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &trackedConn{Conn: conn, owner: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		conn.Close()
	} else {
		l.conns[c] = struct{}{}
	}
	return c, nil
}

// closeConns closes every connection accepted, and those accepted from now on.
func (l *closingListener) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closing = true
	for c := range l.conns {
		c.Conn.Close()
	}
	clear(l.conns)
}

// trackedConn leaves its listener's set when it closes.
type trackedConn struct {
	net.Conn
	owner *closingListener
}

func (c *trackedConn) Close() error {
	c.owner.mu.Lock()
	delete(c.owner.conns, c)
	c.owner.mu.Unlock()
	return c.Conn.Close()
}
