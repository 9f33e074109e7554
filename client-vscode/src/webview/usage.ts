/**
 * Token usage and context fill as the user reads them (the chat's header line, the status bar's
 * tooltip, the compaction card). Pure: no DOM and no `vscode`, tested in plain Node.
 */
import type { SessionUsage } from '../wireTypes';

/** Above this share of the context window the fill is shown as a warning. */
export const CONTEXT_WARNING_FILL = 0.8;

const UNITS: [number, string][] = [
  [1_000_000, 'M'],
  [1_000, 'k'],
];

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/** A token count in a few characters: 950, 7.4k, 41.2k, 128k, 1.2M. */
export function formatTokens(value: number): string {
  let n = Math.round(count(value));
  if (n < 1000) return String(n);
  for (let u = 0; u < UNITS.length; u++) {
    const [size, suffix] = UNITS[u];
    if (n < size) continue;
    const scaled = n / size;
    let text = scaled < 100 ? scaled.toFixed(1) : scaled.toFixed(0);
    // 999,950 is 1000.0k: say 1M instead.
    if (Number(text) >= 1000 && u > 0) {
      n = UNITS[u - 1][0];
      return formatTokens(n);
    }
    if (text.endsWith('.0')) text = text.slice(0, -2);
    return `${text}${suffix}`;
  }
  return String(n);
}

/** Dollars: $0.04, $1.25; below a cent with the digits that matter ($0.0031); $0 when free. */
export function formatCost(usd: number): string {
  const v = count(usd);
  if (v === 0) return '$0';
  if (v < 0.01) return `$${v.toPrecision(2).replace(/0+$/, '')}`;
  return `$${v.toFixed(2)}`;
}

export interface ContextFill {
  /** Whole percent of the window, or null when the window is unknown. */
  percent: number | null;
  /** The fill is above CONTEXT_WARNING_FILL. */
  warning: boolean;
}

export function contextFill(usage: Pick<SessionUsage, 'contextTokens' | 'contextWindow'>): ContextFill {
  const tokens = count(usage.contextTokens);
  const window = count(usage.contextWindow);
  if (window === 0) return { percent: null, warning: false };
  return { percent: Math.round((100 * tokens) / window), warning: tokens / window > CONTEXT_WARNING_FILL };
}

/** "Context 23% (7.4k / 32k)", or "Context 7.4k tokens" when the window is unknown. */
export function contextText(usage: SessionUsage): string {
  const { percent } = contextFill(usage);
  if (percent === null) return `Context ${formatTokens(usage.contextTokens)} tokens`;
  return `Context ${percent}% (${formatTokens(usage.contextTokens)} / ${formatTokens(usage.contextWindow)})`;
}

function compactionsText(n: number): string {
  return `${n} compaction${n === 1 ? '' : 's'}`;
}

/** The chat's header line: "Context 23% (7.4k / 32k) · 12.3k in / 1.1k out · $0.04 · 1
 * compaction" (the cost only when a price is configured, compactions once there was one). */
export function usageLine(usage: SessionUsage): string {
  const parts = [contextText(usage), `${formatTokens(usage.inputTokens)} in / ${formatTokens(usage.outputTokens)} out`];
  if (typeof usage.costUsd === 'number') parts.push(formatCost(usage.costUsd));
  const compactions = count(usage.compactions);
  if (compactions > 0) parts.push(compactionsText(compactions));
  return parts.join(' · ');
}

/** The status bar tooltip's lines about usage. */
export function usageTooltipLines(usage: SessionUsage): string[] {
  const { percent, warning } = contextFill(usage);
  const context = percent === null
    ? `Context: ${formatTokens(usage.contextTokens)} tokens (window unknown)`
    : `Context: ${percent}% of ${formatTokens(usage.contextWindow)} tokens (${formatTokens(usage.contextTokens)})` +
      (warning ? ' — nearly full: Compact frees it' : '');
  const cached = count(usage.cachedInputTokens) > 0 ? ` (${formatTokens(usage.cachedInputTokens)} cached)` : '';
  const lines = [context, `Session tokens: ${formatTokens(usage.inputTokens)} in${cached} / ${formatTokens(usage.outputTokens)} out`];
  if (typeof usage.costUsd === 'number') lines.push(`Cost: ${formatCost(usage.costUsd)}`);
  const compactions = count(usage.compactions);
  if (compactions > 0) lines.push(`Compacted: ${compactionsText(compactions)}`);
  return lines;
}

/** A short status-bar part when the context is nearly full ("$(warning) ctx 85%"), else "". */
export function statusBarFill(usage: SessionUsage | undefined): string {
  if (!usage) return '';
  const { percent, warning } = contextFill(usage);
  return warning && percent !== null ? `$(warning) ctx ${percent}%` : '';
}

export interface CompactionFields {
  trigger: string;
  prunedOutputs: number;
  tokensBefore: number;
  tokensAfter: number;
}

/** "Conversation compacted (manual): 3 tool outputs pruned, 41.2k → 9.8k tokens". */
export function compactionTitle(c: CompactionFields): string {
  const trigger = c.trigger === 'auto' || c.trigger === 'manual' ? c.trigger : 'manual';
  const pruned = count(c.prunedOutputs);
  return `Conversation compacted (${trigger}): ${pruned} tool output${pruned === 1 ? '' : 's'} pruned, ` +
    `${formatTokens(c.tokensBefore)} → ${formatTokens(c.tokensAfter)} tokens`;
}

/** Whether a pushed state's `usage` has the wire's shape (an older server sends none). */
export function isUsage(value: unknown): value is SessionUsage {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.contextTokens === 'number' && typeof v.contextWindow === 'number' &&
    typeof v.inputTokens === 'number' && typeof v.outputTokens === 'number';
}
