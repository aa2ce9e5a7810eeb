// Banks and e-wallets: list them, switch them on and off. A change is seen by every API process
// as it commits (the tables notify; the processes drop their one-hour cache).
import { z } from 'zod';
import {
  listBanks,
  listEwallets,
  setBankEnabled,
  setEwalletEnabled,
  type BankRow,
  type EwalletRow,
} from '../../db/master-data.ts';
import { command, OpsError } from './command.ts';

const code = z.object({ code: z.string().min(1, '--code is required') });
const state = (enabled: boolean) => (enabled ? 'enabled ' : 'disabled');
const bankLine = (b: BankRow) => `${b.short_code.padEnd(20)} ${b.bi_code}  ${state(b.is_enabled)}  ${b.name}`;
const ewalletLine = (e: EwalletRow) => `${e.short_code.padEnd(12)} ${state(e.is_enabled)}  ${e.name}`;

export const banksList = command({
  name: 'banks:list',
  summary: 'List banks (short code, Bank Indonesia code, enabled), disabled ones included',
  usage: 'banks:list [--json]',
  flags: {},
  input: z.object({}),
  async run(ctx) {
    const banks = await listBanks(await ctx.pool());
    return { json: { banks }, text: banks.map(bankLine).join('\n') || 'no banks' };
  },
});

function bankSwitch(enabled: boolean) {
  const verb = enabled ? 'enable' : 'disable';
  return command({
    name: `banks:${verb}`,
    summary: enabled ? 'Offer a bank as a disbursement destination again' : 'Stop offering a bank (GET /v1/banks drops it)',
    usage: `banks:${verb} --code SHORT_CODE [--json]`,
    flags: { code: { type: 'string' } },
    input: code,
    async run(ctx, input) {
      const bank = await setBankEnabled(await ctx.pool(), input.code, enabled);
      if (!bank) throw new OpsError(`no bank with short code ${input.code} (banks:list shows them)`);
      return { json: { bank }, text: `bank ${bank.short_code} (${bank.name}) ${verb}d` };
    },
  });
}

export const banksEnable = bankSwitch(true);
export const banksDisable = bankSwitch(false);

export const ewalletsList = command({
  name: 'ewallets:list',
  summary: 'List e-wallets (short code, enabled), disabled ones included',
  usage: 'ewallets:list [--json]',
  flags: {},
  input: z.object({}),
  async run(ctx) {
    const ewallets = await listEwallets(await ctx.pool());
    return { json: { ewallets }, text: ewallets.map(ewalletLine).join('\n') || 'no e-wallets' };
  },
});

function ewalletSwitch(enabled: boolean) {
  const verb = enabled ? 'enable' : 'disable';
  return command({
    name: `ewallets:${verb}`,
    summary: enabled ? 'Offer an e-wallet as a disbursement destination again' : 'Stop offering an e-wallet (GET /v1/ewallets drops it)',
    usage: `ewallets:${verb} --code SHORT_CODE [--json]`,
    flags: { code: { type: 'string' } },
    input: code,
    async run(ctx, input) {
      const ewallet = await setEwalletEnabled(await ctx.pool(), input.code, enabled);
      if (!ewallet) throw new OpsError(`no e-wallet with short code ${input.code} (ewallets:list shows them)`);
      return { json: { ewallet }, text: `e-wallet ${ewallet.short_code} (${ewallet.name}) ${verb}d` };
    },
  });
}

export const ewalletsEnable = ewalletSwitch(true);
export const ewalletsDisable = ewalletSwitch(false);
