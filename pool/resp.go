package pool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The little of RESP2 a subscription connection and ReadIdentity need:
// commands as arrays of bulk strings, and replies read as strings,
// integers, errors and arrays. Sizes are bounded, so a confused peer cannot
// make the reader allocate without limit.
const (
	maxBulk  = 1 << 20
	maxArray = 1 << 10
	maxDepth = 4
)

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args []string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// reader reads RESP2 values.
type reader struct{ r *bufio.Reader }

func newReader(r io.Reader) *reader { return &reader{r: bufio.NewReader(r)} }

// errorReply is an error the server answered (a "-" line).
type errorReply string

func (e errorReply) Error() string { return string(e) }

var errProtocol = errors.New("pool: malformed reply")

// value reads one value: string (simple or bulk, "" for a nil bulk), int64,
// []any, or an errorReply as the error.
func (r *reader) value() (any, error) { return r.read(0) }

func (r *reader) read(depth int) (any, error) {
	line, err := r.line()
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, errProtocol
	}
	switch line[0] {
	case '+':
		return string(line[1:]), nil
	case '-':
		return nil, errorReply(line[1:])
	case ':':
		return strconv.ParseInt(string(line[1:]), 10, 64)
	case '$':
		return r.bulk(line[1:])
	case '*':
		if depth >= maxDepth {
			return nil, errProtocol
		}
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil || n > maxArray {
			return nil, errProtocol
		}
		arr := make([]any, 0, max(n, 0))
		for range n {
			v, err := r.read(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	}
	return nil, fmt.Errorf("%w: type %q", errProtocol, line[0])
}

func (r *reader) bulk(size []byte) (any, error) {
	n, err := strconv.Atoi(string(size))
	if err != nil || n > maxBulk {
		return nil, errProtocol
	}
	if n < 0 {
		return "", nil
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r.r, buf); err != nil {
		return nil, err
	}
	return string(buf[:n]), nil
}

// line reads up to CRLF, without it.
func (r *reader) line() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errProtocol
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errProtocol
	}
	return line[:len(line)-2], nil
}
