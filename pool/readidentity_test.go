package pool_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/internal/redistls"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/conformance"
)

// dialRaw opens a plain TCP connection to addr with a deadline, closed when
// t ends.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	return conn
}

func TestReadIdentity(t *testing.T) {
	const user = "alice"
	srv := redistls.Start(t, redistls.Options{Users: []redistls.User{{Name: user, Password: conformance.Secret}}})

	t.Run("LoggedIn", func(t *testing.T) {
		conn := dialRaw(t, srv.Addr())
		id, err := pool.ReadIdentity(conn, user, conformance.Secret, 0)
		require.NoError(t, err)
		assert.Len(t, id.RunID, 40)
		assert.True(t, id.FreshStart)
		assert.Equal(t, pool.PersistencePartial, id.Persistence)
		assert.NoError(t, id.Err)
		// Nothing is left unread: the next reply is the next command's.
		_, err = conn.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		line, err := bufio.NewReader(conn).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "+PONG\r\n", line)
	})
	t.Run("WrongPassword", func(t *testing.T) {
		conn := dialRaw(t, srv.Addr())
		_, err := pool.ReadIdentity(conn, user, "not-"+conformance.Secret, 0)
		require.ErrorContains(t, err, "AUTH")
		assert.NotContains(t, err.Error(), conformance.Secret)
	})
	t.Run("NoLogin", func(t *testing.T) {
		conn := dialRaw(t, srv.Addr())
		id, err := pool.ReadIdentity(conn, "", "", 0)
		require.NoError(t, err, "refused commands leave fields unknown")
		assert.Empty(t, id.RunID)
		assert.True(t, id.Started.IsZero())
		assert.Equal(t, pool.PersistenceUnknown, id.Persistence)
		assert.ErrorContains(t, id.Err, "NOAUTH")
	})
	t.Run("BadDatabase", func(t *testing.T) {
		conn := dialRaw(t, srv.Addr())
		_, err := pool.ReadIdentity(conn, user, conformance.Secret, 100000)
		require.ErrorContains(t, err, "SELECT")
	})
}

func TestReadIdentityNetworkError(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	conn := dialRaw(t, srv.Addr())
	srv.Kill()
	_, err := pool.ReadIdentity(conn, "", "", 0)
	require.ErrorContains(t, err, "reading the server's identity")
}
