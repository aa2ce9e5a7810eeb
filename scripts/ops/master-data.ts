// Banks and e-wallets: switch them on and off (their lists are in scripts/ops/lists.ts). A
// change is seen by every API process as it commits (the tables notify; the processes drop
// their one-hour cache).
import { z } from 'zod';
import { setBankEnabled, setEwalletEnabled } from '../../db/master-data.ts';
import { command, OpsError } from './command.ts';

const code = z.object({ code: z.string().min(1, '--code is required') });

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
