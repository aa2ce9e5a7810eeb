// The legacy X-SIGNATURE check (spec 5.4) on its own: what verifies, and everything that must not.
import t from 'tap';
import { createHash, generateKeyPairSync, sign, verify } from 'node:crypto';
import { bodyHash, legacyKeyProblem, signedText, verifyXSignature } from '../../api/legacy/rsa-signature.ts';

const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
const pkcs1Pem = publicKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });

const body = Buffer.from('{"clientId":"KSR1","orderId":"PO-1","requestAmount":150000}');
const text = signedText('KSR1', 'secret-s3cret', body);
const signature = sign('sha256', Buffer.from(text), privateKey).toString('base64');

t.test('the signed text is clientId|clientSecret|lowercase hex SHA-256 of the raw body', async (t) => {
  const hex = createHash('sha256').update(body).digest('hex');
  t.equal(bodyHash(body), hex);
  t.match(hex, /^[0-9a-f]{64}$/);
  t.equal(text, `KSR1|secret-s3cret|${hex}`);
  t.equal(bodyHash(Buffer.alloc(0)), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'empty body');
});

t.test('a PKCS#1 v1.5 RSA-SHA256 signature in base64 verifies with the SPKI or PKCS#1 public key', async (t) => {
  t.equal(verifyXSignature(publicPem, text, signature), true);
  t.equal(verifyXSignature(pkcs1Pem, text, signature), true);
  t.equal(verifyXSignature(publicPem, text, ` ${signature} `), true, 'surrounding spaces are ignored');
});

t.test('anything else is refused, never thrown', async (t) => {
  const otherText = signedText('KSR1', 'secret-s3cret', Buffer.from(`${body.toString()} `));
  t.equal(verifyXSignature(publicPem, otherText, signature), false, 'one more byte in the body');
  t.equal(verifyXSignature(publicPem, signedText('KSR1', 'another-secret', body), signature), false, 'another client secret');
  t.equal(verifyXSignature(publicPem, signedText('KSR2', 'secret-s3cret', body), signature), false, 'another client id');
  t.equal(verifyXSignature(publicPem, text, sign('sha256', Buffer.from(text), other.privateKey).toString('base64')), false, 'another private key');
  t.equal(verifyXSignature(publicPem, text, sign('sha1', Buffer.from(text), privateKey).toString('base64')), false, 'SHA-1');
  t.equal(verifyXSignature(publicPem, text, undefined), false, 'no header');
  t.equal(verifyXSignature(publicPem, text, ''), false, 'empty header');
  t.equal(verifyXSignature(publicPem, text, Buffer.from(signature, 'base64').toString('hex')), false, 'hex instead of base64');
  t.equal(verifyXSignature(publicPem, text, Buffer.from(signature, 'base64').toString('base64url')), false, 'base64url');
  t.equal(verifyXSignature(publicPem, text, signature.slice(0, -4)), false, 'truncated');
  t.equal(verifyXSignature(publicPem, text, `${signature}AAAA`), false, 'extended');
  t.equal(verifyXSignature('not a key', text, signature), false, 'unreadable key');
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ecPem = ec.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  t.equal(verifyXSignature(ecPem, text, sign('sha256', Buffer.from(text), ec.privateKey).toString('base64')), false, 'an EC key never verifies');
});

t.test('an RSA key under 2048 bits never verifies, even with a valid signature', async (t) => {
  for (const bits of [512, 1024, 2047]) {
    const weak = generateKeyPairSync('rsa', { modulusLength: bits });
    const weakPem = weak.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const signed = sign('sha256', Buffer.from(text), weak.privateKey).toString('base64');
    t.equal(verify('sha256', Buffer.from(text), weak.publicKey, Buffer.from(signed, 'base64')), true, `the ${bits}-bit signature itself is valid`);
    t.equal(verifyXSignature(weakPem, text, signed), false, `${bits}-bit key refused`);
    t.match(legacyKeyProblem(weak.publicKey), new RegExp(`${bits}-bit RSA key`), 'and the reason names its size');
  }
  t.equal(legacyKeyProblem(publicKey), null, '2048 bits is enough');
  t.match(legacyKeyProblem(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey), /RSA key is required/);
});
