package rueidispool

import (
	"encoding"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// normalize turns a reply into the types pool.Pool documents: int64, string,
// []any, and (nil, nil) for a nil reply, whether the connection speaks RESP2
// or RESP3. A RESP3 boolean, which a script returns only after
// redis.setresp(3), becomes what RESP2 makes of it: true is int64(1), false
// is nil. Doubles stay float64 and maps map[string]any, as rueidis gives
// them; an error nested in an array stays an error value in the slice.
func normalize(res rueidis.RedisResult) (any, error) {
	v, err := res.ToAny()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fromRESP3(v), nil
}

func fromRESP3(v any) any {
	switch v := v.(type) {
	case bool:
		if v {
			return int64(1)
		}
		return nil
	case []any:
		for i, e := range v {
			v[i] = fromRESP3(e)
		}
		return v
	case map[string]any:
		for k, e := range v {
			v[k] = fromRESP3(e)
		}
		return v
	}
	return v
}

// encodeArgs formats script arguments as go-redis does, so that a script
// sees the same ARGV whichever adapter runs it: integers and floats in
// decimal, bools as 1 or 0, durations in nanoseconds, times in RFC 3339, and
// encoding.BinaryMarshaler values as their bytes.
func encodeArgs(args []any) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		s, err := encodeArg(a)
		if err != nil {
			return nil, fmt.Errorf("rueidispool: argument %d: %w", i, err)
		}
		out[i] = s
	}
	return out, nil
}

func encodeArg(a any) (string, error) {
	switch v := a.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case int:
		return strconv.FormatInt(int64(v), 10), nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 64), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	case time.Duration:
		return strconv.FormatInt(v.Nanoseconds(), 10), nil
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	case encoding.BinaryMarshaler:
		b, err := v.MarshalBinary()
		return string(b), err
	}
	return "", fmt.Errorf("cannot encode %T (implement encoding.BinaryMarshaler)", a)
}
