import { latestBranch, type TreeNode } from './message-tree';

const m = (id: string, parent: string | null, latest: string | null): TreeNode => ({ message_id: id, parent_message_id: parent, latest_child_message_id: latest });

describe('latestBranch', () => {
  it('follows each message\'s latest child from the root', () => {
    // 1 -> 2 -> (3 | 4 latest) ; 4 -> 5
    const msgs = [m('1', null, '2'), m('2', '1', '4'), m('3', '2', null), m('4', '2', '5'), m('5', '4', null)];
    expect(latestBranch(msgs).map((x) => x.message_id)).toEqual(['1', '2', '4', '5']);
  });

  it('switches branch when a parent names another latest child', () => {
    const msgs = [m('1', null, '2'), m('2', '1', '3'), m('3', '2', null), m('4', '2', '5'), m('5', '4', null)];
    expect(latestBranch(msgs).map((x) => x.message_id)).toEqual(['1', '2', '3']);
  });

  it('is empty without messages and stops at an unknown child or a cycle', () => {
    expect(latestBranch([])).toEqual([]);
    expect(latestBranch([m('1', null, '9')]).map((x) => x.message_id)).toEqual(['1']);
    expect(latestBranch([m('1', null, '2'), m('2', '1', '1')]).map((x) => x.message_id)).toEqual(['1', '2']);
  });
});
