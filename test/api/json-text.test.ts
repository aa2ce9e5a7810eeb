// JSON text kept as sent (api/http/json-text.ts): the member cut out of a raw body, and the
// serialiser that splices it back. The HTTP behaviour is in test/orders/v1-create.test.ts.
import t from 'tap';
import { RawJson, memberText, toJson } from '../../db/present/json-text.ts';

t.test('memberText cuts out the named member of the top-level object, whitespace between tokens dropped', async (t) => {
  const cases: Array<[source: string, expected: string | undefined, what: string]> = [
    ['{"metadata":{"b":1,"2":2}}', '{"b":1,"2":2}', 'integer-like key order kept'],
    ['{"a":"}","metadata":[1,{"x":"]"}],"z":0}', '[1,{"x":"]"}]', 'brackets inside strings do not count'],
    ['{"a":"\\"metadata\\":1","metadata":"s"}', '"s"', 'a key-looking string in a value is not a key'],
    ['{"a":{"metadata":1},"metadata":2}', '2', 'only top-level members'],
    ['{"a":{"metadata":1}}', undefined, 'a nested member is not found'],
    ['{"meta\\u0064ata":{"k":"v"}}', '{"k":"v"}', 'an escaped key is compared by value'],
    ['{"metadata":"a\\\\","b":1}', '"a\\\\"', 'a string ending in an escaped backslash'],
    ['{"metadata":{"s":"x \\" y"}}', '{"s":"x \\" y"}', 'an escaped quote inside a nested string'],
    ['\r\n\t{ "metadata" :\n {\t"k" :  [ 1 ,2 ] , "s" : " a\\n b " } }  ', '{"k":[1,2],"s":" a\\n b "}', 'whitespace dropped except inside strings'],
    ['{"metadata":1,"metadata":{"last":true}}', '{"last":true}', 'the last of repeated members, as JSON.parse keeps'],
    ['{"metadata":123456789012345678901234567890}', '123456789012345678901234567890', 'numbers as written'],
    ['{"metadata":-1.5e-7,"x":true}', '-1.5e-7', 'a number followed by another member'],
    ['{"metadata":null}', 'null', 'null'],
    ['{}', undefined, 'an empty object'],
    ['[{"metadata":1}]', undefined, 'not an object'],
  ];
  for (const [source, expected, what] of cases) {
    JSON.parse(source); // every case is valid JSON, as the body parser guarantees
    t.equal(memberText(source, 'metadata'), expected, what);
  }
});

t.test('toJson writes exactly what JSON.stringify writes, RawJson values as their text', async (t) => {
  const values: unknown[] = [
    null,
    0,
    -1.5,
    'é "q" \\ \u2028',
    true,
    [],
    {},
    [1, undefined, () => 1, null, 'x'],
    { a: undefined, b: () => 1, c: null, d: [{ e: new Date(0) }], '2': 'two', z: { y: [] } },
    new Date(1_700_000_000_123),
  ];
  for (const [i, value] of values.entries()) t.equal(toJson(value), JSON.stringify(value), `same as JSON.stringify: value ${i}`);
  t.equal(toJson(undefined), 'null', 'undefined at the top: null');

  const text = '{"b":1,"2":[{"sku":"A1","qty":2}]}';
  t.equal(toJson({ success: true, data: [{ metadata: new RawJson(text), n: 1 }] }), `{"success":true,"data":[{"metadata":${text},"n":1}]}`, 'spliced as text, wherever it sits');
  t.strictSame(JSON.parse(JSON.stringify({ m: new RawJson(text) })), { m: JSON.parse(text) }, 'a plain JSON.stringify still writes the value');
});
