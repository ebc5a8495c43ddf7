-- case: big and precise numbers with expansion on (Jackson rebuilds them as long or double)
-- records: 2
-- difference: json-expansion
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('ledger', 'n-1', 'numbers', '{"a":199.00,"b":12345678.9,"c":9007199254740993,"d":-0,"e":1.0E+2,"f":0.1,"g":9223372036854775807,"h":-9223372036854775808,"i":1e-7,"j":3.141592653589793238462643383279}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('ledger', 'n-2', 'numbers', '{"list":[1, 2.50, -3e2, 100000000000000000000000]}');
