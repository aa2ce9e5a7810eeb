// multipart/form-data uploads, read with busboy (jsonBody leaves multipart bodies unread for
// this). One file part is buffered in memory up to a byte limit, small text fields beside it;
// every way the body can be wrong is a 400 INVALID_FILE saying what, and an oversized file is
// 413 INVALID_FILE. The rest of an oversized body is read and dropped, so the client, still
// sending, gets the answer instead of a reset connection.
import busboy from 'busboy';
import type { Request } from 'express';
import { ApiError } from '../../db/errors.ts';

export interface UploadedFile {
  filename: string | null;
  bytes: Buffer;
}

export interface Upload {
  file: UploadedFile | null;
  fields: Record<string, string>;
}

/** Framing and small fields never come near this; a declared length past limit + this is refused unread. */
const FRAMING_ALLOWANCE = 1024 * 1024;
const FIELD_MAX_BYTES = 1024;

function size(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
  return bytes >= 1024 ? `${Math.round((bytes / 1024) * 10) / 10} KiB` : `${bytes} bytes`;
}

export function readUpload(req: Request, options: { fileField: string; maxFileBytes: number }): Promise<Upload> {
  const type = String(req.headers['content-type'] ?? '');
  if (!/^multipart\/form-data\s*;/i.test(type)) {
    return Promise.reject(new ApiError('INVALID_FILE', 'body must be multipart/form-data'));
  }
  const tooLarge = new ApiError('INVALID_FILE', `${options.fileField}: larger than ${size(options.maxFileBytes)}`, 413);
  if (Number(req.headers['content-length']) > options.maxFileBytes + FRAMING_ALLOWANCE) return Promise.reject(tooLarge);

  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        limits: { fileSize: options.maxFileBytes, files: 1, fields: 10, fieldSize: FIELD_MAX_BYTES, parts: 20 },
      });
    } catch (err) {
      reject(new ApiError('INVALID_FILE', `multipart body could not be read: ${(err as Error).message}`));
      return;
    }
    let file: UploadedFile | null = null;
    const fields: Record<string, string> = {};
    let problem: ApiError | null = null;
    let pending = 0; // file streams still being read
    let closed = false;
    const finish = () => {
      if (!closed || pending > 0) return;
      if (problem) reject(problem);
      else resolve({ file, fields });
    };

    parser.on('file', (name, stream, info) => {
      if (name !== options.fileField) {
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      pending++;
      stream.on('data', (chunk: Buffer) => {
        if (!problem) chunks.push(chunk);
      });
      stream.on('limit', () => {
        problem ??= tooLarge;
        chunks.length = 0;
      });
      stream.on('end', () => {
        pending--;
        if (!problem) file = { filename: info.filename ?? null, bytes: Buffer.concat(chunks) };
        finish();
      });
    });
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) problem ??= new ApiError('INVALID_FILE', `${name}: longer than ${FIELD_MAX_BYTES} bytes`);
      else fields[name] = value;
    });
    parser.on('filesLimit', () => {
      problem ??= new ApiError('INVALID_FILE', `only one file may be uploaded, in the ${options.fileField} part`);
    });
    parser.on('partsLimit', () => {
      problem ??= new ApiError('INVALID_FILE', 'too many parts in the multipart body');
    });
    parser.on('fieldsLimit', () => {
      problem ??= new ApiError('INVALID_FILE', 'too many fields in the multipart body');
    });
    parser.on('error', (err: Error) => {
      req.unpipe(parser);
      req.resume();
      reject(new ApiError('INVALID_FILE', `multipart body could not be read: ${err.message}`));
    });
    parser.on('close', () => {
      closed = true;
      finish();
    });
    req.on('error', (err) => reject(new ApiError('INVALID_FILE', `upload interrupted: ${err.message}`)));
    req.pipe(parser);
  });
}
