package redlock

// WaitIdle waits for the Client's background node calls (stragglers,
// cleanup) to end, so tests can inspect the nodes deterministically. It must
// not run concurrently with new operations.
func (c *Client) WaitIdle() { c.wg.Wait() }
